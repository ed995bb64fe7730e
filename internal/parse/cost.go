package parse

import goparser "go/parser"

// checkCost checks that cost= is one Go expression. As for key=, only
// syntax is checked here; that it is an integer in the method's scope is
// the generator's business.
func (p *parser) checkCost(v value) {
	if !v.lexOK {
		return // the unclosed bracket or literal is already reported
	}
	if parts := splitTopLevel(v.Value); len(parts) > 1 {
		p.errorf(v.off+parts[1][0]-1, "cost= takes one integer expression, not a list; remove the \",\" (key= is the option whose parts are separated by commas)")
		return
	}
	if _, err := goparser.ParseExpr(v.Value); err != nil {
		p.errorf(v.off, "cost %q is not a Go expression: %s", v.Value, exprMessage(err))
		return
	}
	p.d.Cost = &Expr{Text: v.Value, Pos: p.loc.at(v.off)}
}
