package main

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/ratelimitgen/ratelimitgen/examples/verifycode/notify"
	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// handler serves the verification-code API:
//
//	POST /codes         {"email":"alice@example.com"}
//	POST /codes/verify  {"email":"alice@example.com","code":"123456"}
//
// It depends on the notify.CodeService interface, and newApp gives it the
// rate-limited wrapper, so no request reaches the service unlimited.
type handler struct {
	codes notify.CodeService
	log   *slog.Logger
}

// newHandler returns the API's routes. QuotaHeaders adds the RateLimit
// fields of every limit a request's calls were admitted by, which the
// limiter of newCodeService records, so the handlers need not.
func newHandler(codes notify.CodeService, log *slog.Logger) http.Handler {
	h := &handler{codes: codes, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /codes", h.sendCode)
	mux.HandleFunc("POST /codes/verify", h.verifyCode)
	return ratelimithttp.QuotaHeaders(mux)
}

func (h *handler) sendCode(w http.ResponseWriter, r *http.Request) {
	var req notify.SendCodeRequest
	if !decode(w, r, &req) {
		return
	}
	if err := req.Validate(); err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	err := h.codes.SendCode(r.Context(), req)
	h.respond(w, r, err, "code sent")
}

func (h *handler) verifyCode(w http.ResponseWriter, r *http.Request) {
	var req notify.VerifyCodeRequest
	if !decode(w, r, &req) {
		return
	}
	if err := req.Validate(); err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	err := h.codes.VerifyCode(r.Context(), req)
	h.respond(w, r, err, "code verified")
}

// respond answers the outcome err of a rate-limited call.
func (h *handler) respond(w http.ResponseWriter, r *http.Request, err error, done string) {
	if errors.Is(err, runtime.ErrUnavailable) {
		// The 503 does not say why, and must not: this log line is where
		// an operator learns that Redis is down.
		h.log.Error("rate limiter unavailable", "path", r.URL.Path, "err", err)
	}
	// Denials (429) carry their own RateLimit fields, and limiter failures
	// (503) none, since no decision was recorded.
	if ratelimithttp.WriteError(w, r, err) {
		return
	}
	// The limiter admitted the call, so QuotaHeaders advertises the quota
	// it left whatever the service answered: a client guessing codes sees
	// its attempts run out.
	switch {
	case err == nil:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"status": done})
	case errors.Is(err, notify.ErrWrongCode), errors.Is(err, notify.ErrInvalidRequest):
		writeProblem(w, http.StatusBadRequest, err.Error())
	default:
		h.log.Error("request failed", "path", r.URL.Path, "err", err)
		writeProblem(w, http.StatusInternalServerError, "The request failed on our side. Please retry later.")
	}
}

// decode reads a small JSON body into v, or answers 400 and returns false.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(v); err != nil {
		writeProblem(w, http.StatusBadRequest, `The body must be a JSON object such as {"email":"alice@example.com"}.`)
		return false
	}
	return true
}

// writeProblem answers an RFC 9457 problem, like the 429s and 503s of
// ratelimithttp, so that clients parse one error format.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", contentTypeProblem)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(problem{
		Type:   "about:blank",
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
	})
}
