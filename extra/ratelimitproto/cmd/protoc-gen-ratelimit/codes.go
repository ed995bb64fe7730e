package main

import (
	"fmt"
	"slices"
	"strings"
)

// statusCode is a gRPC status code that count_codes may name, as the
// gRPC and Connect packages spell it.
type statusCode struct {
	name    string // the canonical name, "PERMISSION_DENIED"
	grpc    string // the identifier in google.golang.org/grpc/codes, "PermissionDenied"
	connect string // the identifier in connectrpc.com/connect, "CodePermissionDenied"; "" for OK
}

// statusCodes are the codes in order of their numbers, 0 to 16.
var statusCodes = []statusCode{
	{"OK", "OK", ""},
	{"CANCELLED", "Canceled", "CodeCanceled"},
	{"UNKNOWN", "Unknown", "CodeUnknown"},
	{"INVALID_ARGUMENT", "InvalidArgument", "CodeInvalidArgument"},
	{"DEADLINE_EXCEEDED", "DeadlineExceeded", "CodeDeadlineExceeded"},
	{"NOT_FOUND", "NotFound", "CodeNotFound"},
	{"ALREADY_EXISTS", "AlreadyExists", "CodeAlreadyExists"},
	{"PERMISSION_DENIED", "PermissionDenied", "CodePermissionDenied"},
	{"RESOURCE_EXHAUSTED", "ResourceExhausted", "CodeResourceExhausted"},
	{"FAILED_PRECONDITION", "FailedPrecondition", "CodeFailedPrecondition"},
	{"ABORTED", "Aborted", "CodeAborted"},
	{"OUT_OF_RANGE", "OutOfRange", "CodeOutOfRange"},
	{"UNIMPLEMENTED", "Unimplemented", "CodeUnimplemented"},
	{"INTERNAL", "Internal", "CodeInternal"},
	{"UNAVAILABLE", "Unavailable", "CodeUnavailable"},
	{"DATA_LOSS", "DataLoss", "CodeDataLoss"},
	{"UNAUTHENTICATED", "Unauthenticated", "CodeUnauthenticated"},
}

// countCodes checks the count_codes of a limit: canonical names, each
// once. It returns them in the order of their numbers.
func (c *checker) countCodes(names []string) []statusCode {
	var out []statusCode
	for _, name := range names {
		i := slices.IndexFunc(statusCodes, func(sc statusCode) bool { return sc.name == name })
		switch {
		case i < 0:
			hint := ""
			if j := slices.IndexFunc(statusCodes, func(sc statusCode) bool {
				return strings.EqualFold(sc.name, name) || strings.EqualFold(sc.grpc, name) || strings.EqualFold(sc.connect, name)
			}); j >= 0 {
				hint = fmt.Sprintf(" (write %q)", statusCodes[j].name)
			}
			c.errorf("count_codes: %q is no status code%s; name codes as gRPC does, e.g. \"UNAUTHENTICATED\", \"PERMISSION_DENIED\", \"OK\"", name, hint)
			return nil
		case slices.Contains(out, statusCodes[i]):
			c.errorf("count_codes: %q is listed twice", name)
			return nil
		}
		out = append(out, statusCodes[i])
	}
	slices.SortFunc(out, func(a, b statusCode) int {
		return slices.Index(statusCodes, a) - slices.Index(statusCodes, b)
	})
	return out
}

// codeNames lists codes by their canonical names, for doc comments and
// errors: "UNAUTHENTICATED or PERMISSION_DENIED".
func codeNames(codes []statusCode) string {
	var names []string
	for _, sc := range codes {
		names = append(names, sc.name)
	}
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
