package ctl

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// PasswordEnv is the environment variable that holds the Redis password
// when the URL has none, and SentinelPasswordEnv the sentinels' password.
const (
	PasswordEnv         = "RATELIMITCTL_REDIS_PASSWORD"
	SentinelPasswordEnv = "RATELIMITCTL_SENTINEL_PASSWORD"
)

// connection holds the connection flags.
type connection struct {
	redisURL       string
	cluster        string
	sentinelMaster string
	sentinels      string
	user           string
	timeout        time.Duration
}

// client returns a client for the connection flags, and a description of
// the store for the output that holds no password.
func (c connection) client(env func(string) string) (redis.UniversalClient, string, error) {
	given := 0
	for _, s := range []string{c.redisURL, c.cluster, c.sentinelMaster} {
		if s != "" {
			given++
		}
	}
	switch {
	case given == 0:
		return nil, "", errors.New("say where Redis is: -redis redis://host:6379/0, -cluster host1:6379,host2:6379, or -sentinel-master name -sentinel host1:26379,host2:26379")
	case given > 1:
		return nil, "", errors.New("give only one of -redis, -cluster and -sentinel-master")
	case c.sentinels != "" && c.sentinelMaster == "":
		return nil, "", errors.New("-sentinel goes with -sentinel-master, the name of the master the sentinels watch")
	}
	password := env(PasswordEnv)
	switch {
	case c.redisURL != "":
		opt, err := parseURL("-redis", c.redisURL)
		if err != nil {
			return nil, "", err
		}
		if opt.Username == "" {
			opt.Username = c.user
		}
		if opt.Password == "" {
			opt.Password = password
		}
		c.tune(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.MaxRetries)
		return redis.NewClient(opt), fmt.Sprintf("redis %s db %d", opt.Addr, opt.DB), nil
	case c.cluster != "":
		opt := &redis.ClusterOptions{Username: c.user, Password: password}
		for _, item := range splitList(c.cluster) {
			if !strings.Contains(item, "://") {
				opt.Addrs = append(opt.Addrs, item)
				continue
			}
			o, err := parseURL("-cluster", item)
			if err != nil {
				return nil, "", err
			}
			if o.DB != 0 {
				return nil, "", fmt.Errorf("bad -cluster URL %s: a Redis Cluster has database 0 only", redact(item))
			}
			opt.Addrs = append(opt.Addrs, o.Addr)
			if o.Username != "" {
				opt.Username = o.Username
			}
			if o.Password != "" {
				opt.Password = o.Password
			}
			if o.TLSConfig != nil {
				opt.TLSConfig = o.TLSConfig
			}
		}
		if len(opt.Addrs) == 0 {
			return nil, "", errors.New("-cluster holds no address")
		}
		c.tune(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.MaxRetries)
		return redis.NewClusterClient(opt), "redis cluster " + strings.Join(opt.Addrs, ","), nil
	default:
		addrs := splitList(c.sentinels)
		if len(addrs) == 0 {
			return nil, "", errors.New("-sentinel-master needs the sentinels' addresses: -sentinel host1:26379,host2:26379")
		}
		opt := &redis.FailoverOptions{MasterName: c.sentinelMaster, SentinelAddrs: addrs,
			Username: c.user, Password: password, SentinelPassword: env(SentinelPasswordEnv)}
		c.tune(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.MaxRetries)
		return redis.NewFailoverClient(opt), fmt.Sprintf("redis master %q of sentinels %s", c.sentinelMaster, strings.Join(addrs, ",")), nil
	}
}

// tune sets a client's timeouts to the -timeout flag's, and one retry, so
// that an unreachable Redis is reported soon.
func (c connection) tune(dial, read, write *time.Duration, retries *int) {
	*dial, *read, *write = c.timeout, c.timeout, c.timeout
	*retries = 1
}

// parseURL parses a redis:// or rediss:// URL; its errors never hold the
// password.
func parseURL(flag, raw string) (*redis.Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("bad %s URL: %v", flag, err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("bad %s URL %s: it must begin with redis:// or rediss:// (for TLS)", flag, u.Redacted())
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("bad %s URL %s: %v", flag, u.Redacted(), strings.TrimPrefix(err.Error(), "redis: "))
	}
	return opt, nil
}

// redact returns raw with its password replaced by xxxxx.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unreadable URL)"
	}
	return u.Redacted()
}

// splitList splits a list of addresses separated by commas or spaces.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}
