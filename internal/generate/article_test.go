package generate

import "testing"

func TestWithArticle(t *testing.T) {
	for word, want := range map[string]string{
		"Accounts":    "an Accounts",
		"API":         "an API",
		"Emailer":     "an Emailer",
		"Inbox":       "an Inbox",
		"Outbox":      "an Outbox",
		"Uploader":    "an Uploader",
		"Urgent":      "an Urgent",
		"Users":       "a Users",
		"UserStore":   "a UserStore",
		"Unit":        "a Unit",
		"Uninstaller": "an Uninstaller",
		"Utility":     "a Utility",
		"EuroRates":   "a EuroRates",
		"OneTime":     "a OneTime",
		"Orders":      "an Orders",
		"accounts":    "an accounts",
		"Notifier":    "a Notifier",
		"RateLimited": "a RateLimited",
		"yard":        "a yard",
		"Ωmega":       "a Ωmega",
		"":            "a ",
	} {
		if got := withArticle(word); got != want {
			t.Errorf("withArticle(%q) = %q; want %q", word, got, want)
		}
	}
}
