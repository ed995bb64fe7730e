package generate

import (
	"fmt"
	"time"

	"github.com/dave/jennifer/jen"
)

// methodWait is how long a call of the method may wait for room: the
// longest wait= of its limits, or 0.
func methodWait(wm *wrapperMethod) time.Duration {
	var w time.Duration
	for _, l := range wm.limits {
		w = max(w, l.wait)
	}
	return w
}

// waitDoc completes a method's doc comment when it waits.
func waitDoc(wm *wrapperMethod) string {
	w := methodWait(wm)
	if w == 0 {
		return ""
	}
	return fmt.Sprintf(" Before it denies a call it waits for room, for up to %s in all, each time as long as the limiter says, but never past the deadline of the call's context; if the context is done meanwhile, it returns the context's error.", w)
}

// waitLoop returns the loop that, while decision (d or ds) denies the
// call and the limiter's RetryAfter (retry) fits in what is left of the
// method's wait, sleeps that long and asks again with ask. It is empty for
// a method without wait=.
func (e *emitter) waitLoop(mc methodCall, decision string, retry func() *jen.Statement, ask jen.Code, errName string) []jen.Code {
	w := methodWait(mc.wm)
	if w == 0 {
		return nil
	}
	scope := mc.scope.child()
	waited, r, ok, sleepErr := scope.fresh("waited"), scope.fresh("retry"), scope.fresh("ok"), scope.fresh("err")
	sig := mc.wm.sig
	return []jen.Code{
		jen.For(jen.Id(waited).Op(":=").Qual("time", "Duration").Call(jen.Lit(0)), jen.Op("!").Id(decision).Dot("Allowed"), jen.Empty()).Block(
			jen.Id(r).Op(":=").Add(retry()),
			jen.If(jen.Id(r).Op("<=").Lit(0).Op("||").Id(waited).Op("+").Id(r).Op(">").Add(durationCode(w))).Block(jen.Break()),
			jen.Id(waited).Op("+=").Id(r),
			jen.If(
				jen.List(jen.Id(ok), jen.Id(sleepErr)).Op(":=").Id(e.sleepFunc).Call(mc.ctx, jen.Id(r)),
				jen.Id(sleepErr).Op("!=").Nil(),
			).Block(e.returnZero(sig, scope, jen.Id(sleepErr))...).Else().If(jen.Op("!").Id(ok)).Block(jen.Break()),
			jen.If(jen.List(jen.Id(decision), jen.Id(errName)).Op("=").Add(ask), jen.Id(errName).Op("!=").Nil()).Block(e.returnZero(sig, scope, jen.Id(errName))...),
		),
	}
}

// sleepFuncDecl emits the function that the wait loops sleep with. It
// gives up at once, reporting false, when the context's deadline comes
// before the wait ends: the call is then denied rather than failed.
func (e *emitter) sleepFuncDecl() {
	if e.sleepFunc == "" {
		return
	}
	const ctx, d, t = "ctx", "d", "t"
	e.f.Line()
	e.comment(e.sleepFunc + " waits for d, for a wait= limit. It reports false without waiting when ctx's deadline comes first, and returns ctx's error if ctx is done meanwhile.")
	e.f.Func().Id(e.sleepFunc).Params(jen.Id(ctx).Qual("context", "Context"), jen.Id(d).Qual("time", "Duration")).Params(jen.Bool(), jen.Error()).Block(
		jen.If(jen.List(jen.Id("deadline"), jen.Id("ok")).Op(":=").Id(ctx).Dot("Deadline").Call(), jen.Id("ok").Op("&&").Qual("time", "Until").Call(jen.Id("deadline")).Op("<").Id(d)).Block(
			jen.Return(jen.False(), jen.Nil()),
		),
		jen.Id(t).Op(":=").Qual("time", "NewTimer").Call(jen.Id(d)),
		jen.Defer().Id(t).Dot("Stop").Call(),
		jen.Select().Block(
			jen.Case(jen.Op("<-").Id(ctx).Dot("Done").Call()).Block(jen.Return(jen.False(), jen.Id(ctx).Dot("Err").Call())),
			jen.Case(jen.Op("<-").Id(t).Dot("C")).Block(jen.Return(jen.True(), jen.Nil())),
		),
	)
}
