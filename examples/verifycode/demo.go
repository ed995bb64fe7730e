package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ratelimitgen/ratelimitgen/examples/verifycode/notify"
)

// demo calls the API at base as a client would and prints each response.
// It returns an error if a status is not the one the limits imply, so the
// demo doubles as a smoke test.
func demo(ctx context.Context, out io.Writer, base string, box *outbox) error {
	c := &client{http: &http.Client{Timeout: 10 * time.Second}, base: base, out: out}

	fmt.Fprintln(out, "\n# SendCode: at most 3 codes per 60 s for each address")
	for _, email := range []string{"alice@example.com", "alice@example.com", "alice@example.com"} {
		c.post(ctx, "/codes", notify.SendCodeRequest{Email: email}, "", http.StatusOK)
	}
	fmt.Fprintln(out, "\n# The same mailbox spelt differently shares the count")
	c.post(ctx, "/codes", notify.SendCodeRequest{Email: " Alice@Example.COM "}, "", http.StatusTooManyRequests)
	fmt.Fprintln(out, "\n# Another address has its own count")
	c.post(ctx, "/codes", notify.SendCodeRequest{Email: "bob@example.com"}, "", http.StatusOK)

	alice, _ := box.lastCode("alice@example.com")
	bob, _ := box.lastCode("bob@example.com")
	fmt.Fprintln(out, "\n# VerifyCode: at most 5 attempts per 10 min for each address, right or wrong")
	for range 5 {
		c.post(ctx, "/codes/verify", notify.VerifyCodeRequest{Email: "alice@example.com", Code: wrong(alice)}, "a wrong code", http.StatusBadRequest)
	}
	fmt.Fprintln(out, "\n# Guessing is over: even the right code is refused until the window slides")
	c.post(ctx, "/codes/verify", notify.VerifyCodeRequest{Email: "alice@example.com", Code: alice}, "the right code", http.StatusTooManyRequests)
	fmt.Fprintln(out, "\n# Bob is unaffected")
	c.post(ctx, "/codes/verify", notify.VerifyCodeRequest{Email: "bob@example.com", Code: bob}, "the right code", http.StatusOK)

	fmt.Fprintln(out, "\n# What an operator sees: each limit's decisions, by result and source (histograms left out)")
	c.metrics(ctx, "ratelimit_decisions_total", "ratelimit_near_limit_total")
	return c.err
}

// wrong returns a code that differs from code in its last digit, so the
// demo never guesses right by chance.
func wrong(code string) string {
	if code == "" {
		return "000000"
	}
	last := code[len(code)-1]
	return code[:len(code)-1] + string('0'+(last-'0'+1)%10)
}

// client posts JSON and prints what a reader of the demo should see.
type client struct {
	http *http.Client
	base string
	out  io.Writer
	err  error // the first failure; later calls are skipped
}

// metrics gets /metrics and prints its samples of the named metrics.
func (c *client) metrics(ctx context.Context, names ...string) {
	if c.err != nil {
		return
	}
	fmt.Fprintln(c.out, "GET /metrics")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/metrics", nil)
	if err != nil {
		c.err = err
		return
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.err = err
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.err = err
		return
	}
	if resp.StatusCode != http.StatusOK {
		c.err = fmt.Errorf("GET /metrics: %s", resp.Status)
		return
	}
	for _, line := range strings.Split(string(body), "\n") {
		for _, name := range names {
			if strings.HasPrefix(line, name+"{") {
				fmt.Fprintf(c.out, "  %s\n", line)
			}
		}
	}
}

// post sends body to path and prints the request and the response's
// status, rate-limit fields and problem detail. codeNote, if set, is shown
// instead of the random code in body.
func (c *client) post(ctx context.Context, path string, body any, codeNote string, want int) {
	if c.err != nil {
		return
	}
	payload, _ := json.Marshal(body)
	shown := string(payload)
	if v, ok := body.(notify.VerifyCodeRequest); ok && codeNote != "" {
		shown = strings.Replace(shown, `"code":"`+v.Code+`"`, `"code":<`+codeNote+`>`, 1)
	}
	fmt.Fprintf(c.out, "POST %s %s\n", path, shown)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(payload))
	if err != nil {
		c.err = err
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		c.err = err
		return
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		c.err = err
		return
	}

	fmt.Fprintf(c.out, "  -> %s\n", resp.Status)
	for _, name := range []string{"Retry-After", "RateLimit-Policy", "RateLimit"} {
		for _, v := range resp.Header.Values(name) {
			fmt.Fprintf(c.out, "     %s: %s\n", name, v)
		}
	}
	var p problem
	if resp.Header.Get("Content-Type") == contentTypeProblem && json.Unmarshal(respBody, &p) == nil {
		fmt.Fprintf(c.out, "     detail: %s\n", p.Detail)
	}
	if resp.StatusCode != want {
		c.err = errors.New("demo: " + path + " answered " + resp.Status + ", want " + http.StatusText(want) + "; is another demo sharing this Redis key prefix?")
	}
}
