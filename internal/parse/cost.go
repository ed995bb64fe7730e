package parse

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
	return p.oneExpr(v, name, "one integer expression")
}
