package main

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// outbox is the example's notify.Mailer. Instead of sending e-mail it keeps
// the last code sent to each address, so that the demo can read it back,
// and prints each mail to log when log is not nil (with -serve, so that a
// curl user can see the codes).
type outbox struct {
	log io.Writer

	mu   sync.Mutex
	last map[string]string
}

// newOutbox returns an empty outbox that prints mails to cfg.mailLog.
func newOutbox(cfg config) *outbox {
	return &outbox{log: cfg.mailLog, last: make(map[string]string)}
}

// MailCode implements notify.Mailer.
func (o *outbox) MailCode(_ context.Context, to, code string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last[to] = code
	if o.log != nil {
		fmt.Fprintf(o.log, "mail to %s: your verification code is %s\n", to, code)
	}
	return nil
}

// lastCode returns the last code mailed to the normalised address to.
func (o *outbox) lastCode(to string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	code, ok := o.last[to]
	return code, ok
}
