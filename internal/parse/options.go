package parse

// optionSpec describes one supported option. Supporting a new option is one
// entry in optionTable, plus its check function.
type optionSpec struct {
	name string
	// mode says how the value is scanned: expr for Go expressions.
	mode scanMode
	// required options are reported missing when absent.
	required bool
	// example is a complete option shown in messages, e.g. "window=60s".
	example string
	// check validates the value and stores it in the directive.
	check func(p *parser, v value)
}

// optionTable lists the supported options in the order they are documented.
var optionTable = []optionSpec{
	{name: "key", mode: expr, example: "key=req.Email", check: (*parser).checkKey},
	{name: "window", mode: flat, required: true, example: "window=60s", check: (*parser).checkWindow},
	{name: "tz", mode: flat, example: "tz=Europe/Berlin", check: (*parser).checkTZ},
	{name: "max", mode: expr, required: true, example: "max=10", check: (*parser).checkMax},
	{name: "algo", mode: flat, example: "algo=token-bucket", check: (*parser).checkAlgo},
	{name: "burst", mode: flat, example: "burst=20", check: (*parser).checkBurst},
	{name: "cost", mode: expr, example: "cost=len(req.Items)", check: (*parser).checkCost},
	{name: "name", mode: flat, example: "name=Notifier.SendCode", check: (*parser).checkName},
	{name: "wait", mode: flat, example: "wait=2s", check: (*parser).checkWait},
	{name: "mode", mode: flat, example: "mode=shadow", check: (*parser).checkMode},
	{name: "refund", mode: expr, example: "refund=err == nil", check: (*parser).checkRefund},
	{name: "settle", mode: expr, example: "settle=resp.Usage.TotalTokens", check: (*parser).checkSettle},
	{name: "concurrency", mode: flat, example: "concurrency=2", check: (*parser).checkConcurrency},
	{name: "lease", mode: flat, example: "lease=30s", check: (*parser).checkLease},
}

// Options lists the names of the supported options, in documentation order.
var Options = optionNames()

func optionNames() []string {
	names := make([]string, len(optionTable))
	for i, o := range optionTable {
		names[i] = o.name
	}
	return names
}

// lookupOption returns the spec of the supported option called name.
func lookupOption(name string) (*optionSpec, bool) {
	for i := range optionTable {
		if optionTable[i].name == name {
			return &optionTable[i], true
		}
	}
	return nil, false
}

// isOptionName reports whether name is a supported option.
func isOptionName(name string) bool {
	_, ok := lookupOption(name)
	return ok
}

// example returns the example of the supported option called name, or
// name=VALUE for others.
func example(name string) string {
	if o, ok := lookupOption(name); ok {
		return o.example
	}
	return name + "=VALUE"
}
