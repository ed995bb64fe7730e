package main

import (
	"path"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
)

const connectPackage = protogen.GoImportPath("connectrpc.com/connect")

// generateConnect writes the wrappers of f's Connect handler interfaces
// into NAME_ratelimit.connect.go, in the package where
// protoc-gen-connect-go writes NAME.connect.go with the same suffix and
// simple parameters.
func generateConnect(plugin *protogen.Plugin, f *protogen.File, services []service, suffix string, simple bool) {
	prefix, importPath, pkg := f.GeneratedFilenamePrefix, f.GoImportPath, f.GoPackageName
	if suffix != "" {
		pkg += protogen.GoPackageName(suffix)
		slashed := filepath.ToSlash(prefix)
		prefix = path.Join(path.Dir(slashed), string(pkg), path.Base(slashed))
		importPath = protogen.GoImportPath(path.Join(string(importPath), string(pkg)))
	}
	g := plugin.NewGeneratedFile(prefix+"_ratelimit.connect.go", importPath)
	preamble(g, f, pkg)
	for _, s := range services {
		w := wrapper{g: g, svc: s, iface: s.proto.GoName + "Handler"}
		w.limits()
		w.typeAndConstructor("")
		for _, m := range s.methods {
			w.connectMethod(m, simple)
		}
	}
}

// connectMethod writes the wrapper of one rpc in protoc-gen-connect-go's
// signatures.
func (w wrapper) connectMethod(m method, simple bool) {
	g := w.g
	in, out := g.QualifiedGoIdent(m.proto.Input.GoIdent), g.QualifiedGoIdent(m.proto.Output.GoIdent)
	conn := func(name string) string { return g.QualifiedGoIdent(connectPackage.Ident(name)) }
	ctx := g.QualifiedGoIdent(contextPackage.Ident("Context"))
	req, res, msg := "*"+conn("Request")+"["+in+"]", "*"+conn("Response")+"["+out+"]", "req.Msg"
	if simple {
		req, res, msg = "*"+in, "*"+out, "req"
	}
	w.methodDoc(m)
	name := m.proto.GoName
	recv := "func (r *RateLimited" + w.iface + ") " + name
	clientStreams, serverStreams := m.proto.Desc.IsStreamingClient(), m.proto.Desc.IsStreamingServer()
	uncounted := w.connectUncounted
	switch {
	case !clientStreams && !serverStreams:
		g.P(recv, "(ctx ", ctx, ", req ", req, ") (", res, ", error) {")
		w.body(m, "ctx", msg, "nil, ", "r.next."+name+"(ctx, req)", "resp, err", uncounted)
	case serverStreams && !clientStreams:
		g.P(recv, "(ctx ", ctx, ", req ", req, ", stream *", conn("ServerStream"), "[", out, "]) error {")
		w.body(m, "ctx", msg, "", "r.next."+name+"(ctx, req, stream)", "err", uncounted)
	case clientStreams && !serverStreams:
		g.P(recv, "(ctx ", ctx, ", stream *", conn("ClientStream"), "[", in, "]) (", res, ", error) {")
		w.body(m, "ctx", "", "nil, ", "r.next."+name+"(ctx, stream)", "resp, err", uncounted)
	default:
		g.P(recv, "(ctx ", ctx, ", stream *", conn("BidiStream"), "[", in, ", ", out, "]) error {")
		w.body(m, "ctx", "", "", "r.next."+name+"(ctx, stream)", "err", uncounted)
	}
	g.P("}")
	g.P()
}

// connectUncounted writes the condition that the call's error err ends
// with none of codes: connect.CodeOf says CodeUnknown of a nil error, which
// is a success, OK.
func (w wrapper) connectUncounted(codes []statusCode) string {
	ok := codes[0].name == "OK"
	if ok {
		codes = codes[1:]
	}
	var conds []string
	for _, sc := range codes {
		conds = append(conds, "c != "+w.g.QualifiedGoIdent(connectPackage.Ident(sc.connect)))
	}
	switch {
	case len(conds) == 0:
		// OK alone.
		return "err != nil"
	case ok:
		return "c := " + w.g.QualifiedGoIdent(connectPackage.Ident("CodeOf")) + "(err); err != nil && " + strings.Join(conds, " && ")
	case len(conds) == 1:
		return "err == nil || " + w.g.QualifiedGoIdent(connectPackage.Ident("CodeOf")) + "(err) != " + w.g.QualifiedGoIdent(connectPackage.Ident(codes[0].connect))
	}
	return "c := " + w.g.QualifiedGoIdent(connectPackage.Ident("CodeOf")) + "(err); err == nil || (" + strings.Join(conds, " && ") + ")"
}
