package redigotransport

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver"
)

// maxDB is the last database of a Redis with the default configuration
// (databases 16). FromURL cannot ask the server, so it holds URLs to the
// default: /99 is far more often a typo than a server set up for it.
const maxDB = 15

// urlSettings is what FromURL reads from a URL besides the credentials and
// TLS, which redigo.DialURLContext reads from the URL itself.
type urlSettings struct {
	addr         string // host:port, the Server's name unless WithName
	shown        string // addr as errors may quote it: "" when it holds the password
	db           int
	dialTimeout  time.Duration
	readTimeout  time.Duration
	writeTimeout time.Duration
	clientName   string
	// wait and waitaof: what a write waits for to be a vote (see
	// keyserver/redis's WithWait); waitSet when the URL asks.
	waitSet, waitAOF        bool
	waitLocal, waitReplicas int
}

// dialOptions returns the redigo dial options for the URL's settings.
func (u urlSettings) dialOptions() []redigo.DialOption {
	opts := []redigo.DialOption{
		redigo.DialConnectTimeout(u.dialTimeout),
		redigo.DialTLSHandshakeTimeout(u.dialTimeout), // a server that accepts but never finishes TLS
		redigo.DialReadTimeout(u.readTimeout),
		redigo.DialWriteTimeout(u.writeTimeout),
	}
	if u.db != 0 {
		opts = append(opts, redigo.DialDatabase(u.db))
	}
	if u.clientName != "" {
		opts = append(opts, redigo.DialClientName(u.clientName))
	}
	return opts
}

// parseURL validates rawurl and reads its settings. Its errors quote no
// text from rawurl but the host and port and an unknown parameter's name,
// and those only once the user info is known to have been split off
// cleanly: a password with an unescaped '/', '?' or '#' leaves its tail,
// and the '@' after it, in the path, query or fragment, which parseURL
// refuses before quoting anything. Nor do they quote a piece that holds
// the password: a password typed where a parameter goes, or a host that
// happens to contain it (the fuzzer found "redis://:000000@000000?0").
func parseURL(rawurl string) (urlSettings, error) {
	s := urlSettings{
		dialTimeout:  connectTimeout,
		readTimeout:  ioTimeoutNoCtx,
		writeTimeout: ioTimeoutNoCtx,
	}
	u, err := url.Parse(rawurl)
	if err != nil {
		return s, urlError("", "%s (the URL is not repeated here, as it may hold a password; percent-encode %% / ? # @ in a password)", parseProblem(err))
	}
	switch {
	case u.Scheme == "":
		return s, urlError("", "no scheme: write redis://host:port or rediss://host:port")
	case u.Scheme != "redis" && u.Scheme != "rediss":
		return s, urlError("", "the scheme is not redis or rediss")
	case u.Opaque != "":
		return s, urlError("", "no host: write redis://host:port, with two slashes")
	case strings.Contains(u.Path, "@") || strings.Contains(u.RawQuery, "@") || strings.Contains(u.Fragment, "@"):
		return s, urlError("", "an '@' after the host: percent-encode '/', '?', '#' and '@' in the password (%%2F, %%3F, %%23, %%40)")
	case u.Fragment != "":
		return s, urlError("", "a fragment (#...) is not part of a redis URL")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "localhost"
	}
	if port == "" && strings.HasSuffix(u.Host, ":") {
		return s, urlError("", "the port is not a number from 1 to 65535")
	} else if port == "" {
		port = "6379"
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return s, urlError("", "the port is not a number from 1 to 65535")
	}
	s.addr = net.JoinHostPort(host, port)
	secret, _ := u.User.Password()
	named := s.addr // the server, as the errors below name it
	if holds(named, secret) {
		named = ""
	}
	s.shown = named

	pathDB := -1
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		if pathDB, err = parseDB(p); err != nil {
			return s, urlError(named, "%v (in the path)", err)
		}
		s.db = pathDB
	}
	if err := s.readQuery(u.RawQuery, pathDB, secret); err != nil {
		return s, urlError(named, "%v", err)
	}
	return s, nil
}

// holds reports whether piece, quoted from a URL, would show the URL's
// password secret (empty when it has none).
func holds(piece, secret string) bool {
	return secret != "" && strings.Contains(piece, secret)
}

// readQuery applies the query parameters to s, refusing unknown, repeated
// and malformed ones. pathDB is the database the path named, or -1; secret
// is the URL's password, which its errors must not quote.
func (s *urlSettings) readQuery(rawQuery string, pathDB int, secret string) error {
	seen := map[string]bool{}
	for _, part := range strings.Split(rawQuery, "&") {
		if part == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(part, "=")
		key, err1 := url.QueryUnescape(rawKey)
		value, err2 := url.QueryUnescape(rawValue)
		if err1 != nil || err2 != nil || strings.Contains(part, ";") {
			return errors.New("the query is malformed")
		}
		name := key
		if name == "connect_timeout" {
			name = "dial_timeout"
		}
		if seen[name] {
			return fmt.Errorf("parameter %s is given twice", name)
		}
		seen[name] = true
		var err error
		switch name {
		case "db":
			var db int
			if db, err = parseDB(value); err == nil && pathDB >= 0 && db != pathDB {
				err = errors.New("differs from the database in the path")
			}
			s.db = db
		case "dial_timeout":
			s.dialTimeout, err = parseTimeout(value)
		case "read_timeout":
			s.readTimeout, err = parseTimeout(value)
		case "write_timeout":
			s.writeTimeout, err = parseTimeout(value)
		case "client_name":
			s.clientName, err = value, checkClientName(value)
		case "wait", "waitaof":
			err = s.readWait(name, value, seen)
		default:
			return fmt.Errorf("unknown parameter %s: the query may set db, dial_timeout, connect_timeout, read_timeout, write_timeout, client_name, wait and waitaof", paramName(key, secret))
		}
		if err != nil {
			return fmt.Errorf("parameter %s: %w", key, err)
		}
	}
	return nil
}

// readWait reads wait=N or waitaof=L,N, of which a URL may give one.
func (s *urlSettings) readWait(name, value string, seen map[string]bool) error {
	if seen["wait"] && seen["waitaof"] {
		return errors.New("wait and waitaof do not go together")
	}
	count := func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1000 {
			return 0, errors.New("not a count from 0 to 1000")
		}
		return n, nil
	}
	s.waitSet = true
	if name == "wait" {
		n, err := count(value)
		if err == nil && n < 1 {
			err = errors.New("at least one replica must confirm")
		}
		s.waitReplicas = n
		return err
	}
	l, n, ok := strings.Cut(value, ",")
	local, err1 := count(l)
	replicas, err2 := count(n)
	if !ok || err1 != nil || err2 != nil || local > 1 || local+replicas == 0 {
		return errors.New("not L,N with L 0 or 1 (fsynced here) and N the replicas, not both 0")
	}
	s.waitAOF, s.waitLocal, s.waitReplicas = true, local, replicas
	return nil
}

func parseDB(v string) (int, error) {
	for _, r := range v {
		if r < '0' || r > '9' {
			return 0, errors.New("the database is not a number from 0 to 15")
		}
	}
	db, err := strconv.Atoi(v)
	if err != nil || db > maxDB {
		return 0, fmt.Errorf("the database is above %d, the last one a default Redis has (see FromURL for more)", maxDB)
	}
	return db, nil
}

// parseTimeout reads a Go duration or, as other Redis clients' URLs have
// it, a whole number of seconds.
func parseTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if n, nerr := strconv.Atoi(v); nerr == nil {
		d, err = time.Duration(n)*time.Second, nil
	}
	switch {
	case err != nil:
		return 0, errors.New(`not a duration ("500ms", "2s") or a number of seconds`)
	case d <= 0:
		return 0, errors.New("not positive")
	}
	return d, nil
}

// checkClientName holds a name to what CLIENT SETNAME accepts.
func checkClientName(v string) error {
	if v == "" {
		return errors.New("empty")
	}
	for _, r := range v {
		if r <= ' ' || r > '~' {
			return errors.New("only printable ASCII without spaces")
		}
	}
	return nil
}

// paramName quotes an unknown parameter's name when it looks like one, so
// that a typo is easy to find, and otherwise (or when it holds the
// password, secret) says nothing about it.
func paramName(key, secret string) string {
	if key == "" || len(key) > 32 || holds(key, secret) {
		return "(unnamed)"
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return "(unnamed)"
		}
	}
	return strconv.Quote(key)
}

// parseProblem says what url.Parse found wrong without quoting the URL,
// which its errors do: *url.Error carries the whole URL, and the errors
// inside quote pieces of it, a bad escape from the password included.
func parseProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var esc url.EscapeError
	var host url.InvalidHostError
	switch msg := err.Error(); {
	case errors.As(err, &esc):
		return "an invalid %-escape; write a '%' in a password as %25"
	case errors.As(err, &host):
		return "an invalid character in the host"
	case strings.HasPrefix(msg, "invalid port"):
		return "the port is not a number"
	case strings.ContainsAny(msg, `"'(`):
		return "it does not parse"
	default:
		return strings.TrimPrefix(msg, "net/url: ")
	}
}

// urlError is FromURL's error: ErrInvalidArgument, naming the server when
// the URL got as far as naming it.
func urlError(addr, format string, args ...any) error {
	what := "redis URL"
	if addr != "" {
		what = "redis URL for " + addr
	}
	return fmt.Errorf("%w: %s: %s", keyserver.ErrInvalidArgument, what, fmt.Sprintf(format, args...))
}
