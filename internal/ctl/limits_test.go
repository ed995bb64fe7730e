package ctl

import (
	"flag"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestFind finds limits by their whole name, their last parts, and the
// name as the RateLimit fields spell it, and suggests near names.
func TestFind(t *testing.T) {
	var limits []known
	for _, name := range []string{
		"example.com/notify.Notifier.SendCode",
		"example.com/sms.Notifier.SendCode",
		"example.com/orders.Orders.Query",
		"Jobs.Render.inflight",
		"Café.Order",
	} {
		limits = append(limits, known{limit: runtime.Limit{Name: name}})
	}
	for _, tc := range []struct{ name, want, err string }{
		{"example.com/sms.Notifier.SendCode", "example.com/sms.Notifier.SendCode", ""},
		{"Orders.Query", "example.com/orders.Orders.Query", ""},
		{"Query", "example.com/orders.Orders.Query", ""},
		{"inflight", "Jobs.Render.inflight", ""},
		{"Caf%c3%a9.Order", "Café.Order", ""},
		{"Notifier.SendCode", "", `"Notifier.SendCode" names 2 limits: "example.com/notify.Notifier.SendCode", "example.com/sms.Notifier.SendCode"; give the whole name`},
		{"Orders.Qeury", "", `no limit named "Orders.Qeury"; did you mean "example.com/orders.Orders.Query"?`},
		{"ery", "", `no limit named "ery"; did you mean "example.com/orders.Orders.Query"?`},
		{"Payments.Charge", "", `no limit named "Payments.Charge" (see ` + "`ratelimitctl list`)"},
		{"", "", "give the limit's name with -limit (see `ratelimitctl list`)"},
	} {
		k, err := find(limits, tc.name)
		if tc.err != "" {
			require.EqualError(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, k.limit.Name)
	}
}

// TestDocsNameEveryFlag checks that docs/operators.md names every flag of
// every subcommand, and the environment variables.
func TestDocsNameEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operators.md")
	require.NoError(t, err)
	for _, name := range []string{"list", "show", "reset"} {
		c := &command{stderr: io.Discard}
		c.flags(name).VisitAll(func(f *flag.Flag) {
			require.Contains(t, string(doc), "-"+f.Name, "docs/operators.md does not name %s's -%s", name, f.Name)
		})
	}
	for _, v := range []string{PasswordEnv, SentinelPasswordEnv} {
		require.Contains(t, string(doc), "$"+v)
	}
}
