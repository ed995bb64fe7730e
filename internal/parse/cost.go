package parse

import goparser "go/parser"

// checkCost checks that cost= is one Go expression. As for key=, only
// syntax is checked here; that it is an integer in the method's scope is
// the generator's business.
func (p *parser) checkCost(v value) {
	p.d.Cost = p.integerExpr(v, "cost")
}

// integerExpr checks that the value of option name, which takes one
// integer expression (cost=, and max= when it is not a literal), is one Go
// expression, and returns it; it reports why not and returns nil
// otherwise.
func (p *parser) integerExpr(v value, name string) *Expr {
	if !v.lexOK {
		return nil // the unclosed bracket or literal is already reported
	}
	if parts := splitTopLevel(v.Value); len(parts) > 1 {
		p.errorf(v.off+parts[1][0]-1, "%s= takes one integer expression, not a list; remove the \",\" (key= is the option whose parts are separated by commas)", name)
		return nil
	}
	if _, err := goparser.ParseExpr(v.Value); err != nil {
		p.errorf(v.off, "%s %q is not a Go expression: %s", name, v.Value, exprMessage(err))
		return nil
	}
	return &Expr{Text: v.Value, Pos: p.loc.at(v.off)}
}
