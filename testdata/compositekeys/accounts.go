// Package compositekeys has keys of every supported kind, alone and
// composed.
package compositekeys

import (
	"context"
	"strings"
)

// Tenant is a named string.
type Tenant string

// Plan is a named integer with a String method: it is keyed as an integer.
type Plan int

func (p Plan) String() string { return "plan" }

// Region implements fmt.Stringer with a value receiver.
type Region struct{ code string }

func (r Region) String() string { return r.code }

// Zone implements fmt.Stringer with a pointer receiver only.
type Zone struct{ name string }

func (z *Zone) String() string { return z.name }

// User holds fields of every kind.
type User struct {
	ID     int64
	Name   string
	Tenant Tenant
	Admin  bool
	Raw    []byte
	Region Region
	Age    uint16
	Seq    uint64
	Count  int
}

// Accounts manages users.
type Accounts interface {
	//ratelimit:key=user.Tenant,user.ID,user.Admin,user.Raw,user.Region,user.Age,plan,zone,strings.ToLower(user.Name)+"/"+string(user.Tenant) window=1m max=5
	Update(ctx context.Context, user User, plan Plan, zone Zone) error

	//ratelimit:key=user.Region window=1m max=5
	Move(ctx context.Context, user User) error

	//ratelimit:key=plan window=1m max=5
	Upgrade(ctx context.Context, plan Plan) error

	//ratelimit:key=user.Count window=1m max=5
	Count(ctx context.Context, user User) error

	//ratelimit:key=user.Seq window=1m max=5
	Seq(ctx context.Context, user User) error

	//ratelimit:key=user.Admin window=1m max=5
	Admin(ctx context.Context, user User) error

	//ratelimit:key=user.Raw window=1m max=5
	Raw(ctx context.Context, user User) error

	//ratelimit:key=user.Tenant window=1m max=5
	Tenant(ctx context.Context, user User) error

	//ratelimit:key=*z window=1m max=5
	Zone(ctx context.Context, z *Zone) error
}

var _ = strings.ToLower
