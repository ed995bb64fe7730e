// Command protoc-gen-ratelimit is a protoc plugin: it reads the
// (ratelimitgen.v1.limit) options of a .proto file's rpcs and writes, into
// files of their own, wrappers of the interfaces that protoc-gen-go-grpc
// and protoc-gen-connect-go generate from it, which build each key from the
// request's fields and ask a runtime.Limiter before calling the wrapped
// method.
//
// Parameters (--ratelimit_opt, or opt: in buf.gen.yaml), besides protogen's
// paths= and M:
//
//	grpc            wrap the gRPC server interface XxxServer, in the package of the .pb.go files
//	connect         wrap the Connect handler interface XxxHandler
//	package_suffix  as protoc-gen-connect-go's: where XxxHandler is (default "connect")
//	simple          as protoc-gen-connect-go's: XxxHandler has simple signatures
//
// At least one of grpc and connect is required. A declaration that cannot
// be served (a key that names no field, a bad window) is reported at its
// option's file:line:col, and nothing is written.
package main

import (
	"errors"
	"fmt"
	"go/token"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

func main() {
	var p params
	p.packageSuffix = "connect"
	protogen.Options{ParamFunc: p.set}.Run(func(plugin *protogen.Plugin) error {
		plugin.SupportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL | pluginpb.CodeGeneratorResponse_FEATURE_SUPPORTS_EDITIONS)
		plugin.SupportedEditionsMinimum = descriptorpb.Edition_EDITION_PROTO2
		plugin.SupportedEditionsMaximum = descriptorpb.Edition_EDITION_2024
		return run(plugin, p)
	})
}

// params are the plugin's parameters.
type params struct {
	grpc, connect, simple bool
	packageSuffix         string
}

// set is protogen's ParamFunc. A bool parameter given without a value,
// as in --ratelimit_opt=grpc,connect, is true.
func (p *params) set(name, value string) error {
	flag := func(dst *bool) error {
		switch value {
		case "", "true":
			*dst = true
		case "false":
			*dst = false
		default:
			return fmt.Errorf("parameter %s=%s: write %s, %s=true or %s=false", name, value, name, name, name)
		}
		return nil
	}
	switch name {
	case "grpc":
		return flag(&p.grpc)
	case "connect":
		return flag(&p.connect)
	case "simple":
		return flag(&p.simple)
	case "package_suffix":
		if value != "" && !token.IsIdentifier(value) {
			return fmt.Errorf("package_suffix %q is not a Go identifier", value)
		}
		p.packageSuffix = value
		return nil
	}
	return fmt.Errorf("unknown parameter %q; the parameters are grpc, connect, package_suffix and simple", name)
}

// run generates the wrappers of every file to generate, or reports every
// error in their declarations.
func run(plugin *protogen.Plugin, p params) error {
	if !p.grpc && !p.connect {
		return errors.New("say which interfaces to wrap: --ratelimit_opt=grpc (XxxServer), --ratelimit_opt=connect (XxxHandler) or --ratelimit_opt=grpc,connect; in buf.gen.yaml, opt: [grpc, connect]")
	}
	var errs []string
	for _, f := range plugin.Files {
		if !f.Generate {
			continue
		}
		services, ferrs := declarations(f)
		if len(ferrs) > 0 {
			errs = append(errs, ferrs...)
			continue
		}
		if len(services) == 0 {
			continue
		}
		if p.grpc {
			generateGRPC(plugin, f, services)
		}
		if p.connect {
			generateConnect(plugin, f, services, p.packageSuffix, p.simple)
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}
