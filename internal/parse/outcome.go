package parse

import goparser "go/parser"

// checkRefund checks refund=, the condition over the method's results on
// which an admitted call gives its units back. As for key=, only syntax is
// checked here; that it is a bool over the results is the generator's
// business.
func (p *parser) checkRefund(v value) {
	p.d.Refund = p.oneExpr(v, "refund", "a condition")
}

// checkSettle checks settle=, the integer over the method's results that
// an admitted call counts in place of its cost.
func (p *parser) checkSettle(v value) {
	p.d.Settle = p.oneExpr(v, "settle", "an integer expression")
}

// oneExpr checks that the value of option name is one Go expression, and
// returns it; it reports why not and returns nil otherwise. what says what
// the option takes, for messages.
func (p *parser) oneExpr(v value, name, what string) *Expr {
	if !v.lexOK {
		return nil // the unclosed bracket or literal is already reported
	}
	if parts := splitTopLevel(v.Value); len(parts) > 1 {
		p.errorf(v.off+parts[1][0]-1, "%s= takes %s, not a list; remove the \",\" (key= is the option whose parts are separated by commas)", name, what)
		return nil
	}
	if _, err := goparser.ParseExpr(v.Value); err != nil {
		p.errorf(v.off, "%s %q is not a Go expression: %s", name, v.Value, exprMessage(err))
		return nil
	}
	return &Expr{Text: v.Value, Pos: p.loc.at(v.off)}
}
