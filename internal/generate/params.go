package generate

import (
	"go/types"
	"strconv"
)

// unnamedParamName is the name by which a directive refers to the i'th
// parameter of sig when it has none, and the name the wrapper gives it
// (or a fresh variant): ctx for a first context.Context, in for the first
// other one, then in2, in3, and so on. These are the names
// protoc-gen-go-grpc gives the parameters of a client interface, so that
// a directive in a .proto file, which reaches both the client and the
// server interface, where the parameters have no names, means the same
// in both.
func unnamedParamName(sig *types.Signature, i int) string {
	if i == 0 && isContext(sig.Params().At(0).Type()) {
		return "ctx"
	}
	n := 0
	for j := 0; j <= i; j++ {
		if j == 0 && isContext(sig.Params().At(0).Type()) {
			continue
		}
		n++
	}
	if n == 1 {
		return "in"
	}
	return "in" + strconv.Itoa(n)
}

// hasContextParam reports whether sig's first parameter is a
// context.Context, which the wrapper passes to the limiter.
func hasContextParam(sig *types.Signature) bool {
	return sig.Params().Len() > 0 && isContext(sig.Params().At(0).Type())
}

// contextMethodParam returns the index of the first parameter of sig
// whose type has a method Context() context.Context, such as a gRPC
// server stream or an *http.Request, or -1. Without a first
// context.Context parameter, the wrapper passes that method's result to
// the limiter, so that the call's deadline and values reach it.
func contextMethodParam(sig *types.Signature) int {
	for i := 0; i < sig.Params().Len(); i++ {
		obj, _, _ := types.LookupFieldOrMethod(sig.Params().At(i).Type(), false, nil, "Context")
		fn, ok := obj.(*types.Func)
		if !ok {
			continue
		}
		s := fn.Signature()
		if s.Params().Len() == 0 && s.Results().Len() == 1 && isContext(s.Results().At(0).Type()) {
			return i
		}
	}
	return -1
}

func isContext(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context" && n.Obj().Name() == "Context"
}
