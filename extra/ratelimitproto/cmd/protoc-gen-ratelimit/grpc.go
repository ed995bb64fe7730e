package main

import (
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
)

const (
	grpcPackage   = protogen.GoImportPath("google.golang.org/grpc")
	codesPackage  = protogen.GoImportPath("google.golang.org/grpc/codes")
	statusPackage = protogen.GoImportPath("google.golang.org/grpc/status")
)

// generateGRPC writes the wrappers of f's gRPC server interfaces into
// NAME_ratelimit_grpc.pb.go, beside protoc-gen-go-grpc's NAME_grpc.pb.go.
func generateGRPC(plugin *protogen.Plugin, f *protogen.File, services []service) {
	g := plugin.NewGeneratedFile(f.GeneratedFilenamePrefix+"_ratelimit_grpc.pb.go", f.GoImportPath)
	preamble(g, f, f.GoPackageName)
	for _, s := range services {
		w := wrapper{g: g, svc: s, iface: s.proto.GoName + "Server"}
		w.limits()
		// UnimplementedXxxServer supplies mustEmbedUnimplementedXxxServer
		// when protoc-gen-go-grpc declares it (require_unimplemented_servers,
		// the default), which the wrapper could not forward otherwise.
		w.typeAndConstructor("Unimplemented" + w.iface)
		for _, m := range s.methods {
			w.grpcMethod(m)
		}
	}
}

// grpcMethod writes the wrapper of one rpc in protoc-gen-go-grpc's
// signatures, naming its stream types by the aliases every version
// declares (Verifier_WatchCodesServer).
func (w wrapper) grpcMethod(m method) {
	g := w.g
	in, out := m.proto.Input.GoIdent, m.proto.Output.GoIdent
	stream := m.proto.Parent.GoName + "_" + m.proto.GoName + "Server"
	w.methodDoc(m)
	name := m.proto.GoName
	recv := "func (r *RateLimited" + w.iface + ") " + name
	clientStreams, serverStreams := m.proto.Desc.IsStreamingClient(), m.proto.Desc.IsStreamingServer()
	switch {
	case !clientStreams && !serverStreams:
		g.P(recv, "(ctx ", contextPackage.Ident("Context"), ", in *", in, ") (*", out, ", error) {")
		w.body(m, "ctx", "in", "nil, ", "r.next."+name+"(ctx, in)", "resp, err", w.grpcUncounted)
	case serverStreams && !clientStreams:
		g.P(recv, "(in *", in, ", stream ", stream, ") error {")
		w.body(m, "stream.Context()", "in", "", "r.next."+name+"(in, stream)", "err", w.grpcUncounted)
	default:
		g.P(recv, "(stream ", stream, ") error {")
		w.body(m, "stream.Context()", "", "", "r.next."+name+"(stream)", "err", w.grpcUncounted)
	}
	g.P("}")
	g.P()
}

// grpcUncounted writes the condition that err's status code, OK when nil,
// is none of codes.
func (w wrapper) grpcUncounted(codes []statusCode) string {
	code := w.g.QualifiedGoIdent(statusPackage.Ident("Code")) + "(err)"
	if len(codes) == 1 {
		return code + " != " + w.g.QualifiedGoIdent(codesPackage.Ident(codes[0].grpc))
	}
	var conds []string
	for _, sc := range codes {
		conds = append(conds, "c != "+w.g.QualifiedGoIdent(codesPackage.Ident(sc.grpc)))
	}
	return "c := " + code + "; " + strings.Join(conds, " && ")
}
