module github.com/ratelimitgen/ratelimitgen/extra/ratelimitlint

go 1.25.0

require (
	github.com/golangci/plugin-module-register v0.1.2
	github.com/ratelimitgen/ratelimitgen v0.1.0
	golang.org/x/tools v0.49.0
)

require (
	github.com/dave/jennifer v1.7.1 // indirect
	golang.org/x/mod v0.40.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
)

replace github.com/ratelimitgen/ratelimitgen => ../..
