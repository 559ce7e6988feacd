// Package redact hides secrets in what governor shows and stores for
// others to see: command lines (Args) and URLs (URL). It is the one place
// that decides what counts as a secret.
//
// Redaction is a best effort at the shapes secrets take on command lines;
// it errs toward hiding: a word next to a secret-looking name may be hidden
// though it was not secret. Anything it cannot recognise as a secret is
// shown, so a secret should not be put on a command line at all: pass it in
// the environment or a file.
package redact

import (
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// lazy compiles pattern at its first use: a program that links this
// package and never redacts (governor run's watchdog, a second start of
// the binary per run) does not compile them all at start.
func lazy(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}

// Mark replaces a secret in the output of Args, Text and URL.
const Mark = "***"

// maxDepth bounds how deep Args looks into arguments that are scripts
// (sh -c '…') or hold words (-H 'X-Api-Key: …').
const maxDepth = 3

// Args joins a command line for display, with secrets replaced by Mark and
// arguments quoted for a POSIX shell where needed. It hides:
//
//   - the value of a flag whose name names a secret (--api-key, --token,
//     --password, --client-secret, --accessToken, -Ddb.password, ...), in
//     both the "--flag value" and the "--flag=value" forms;
//   - the value of a NAME=value word whose name names a secret
//     (OPENAI_API_KEY=..., key=..., DB_PASSWORD=...);
//   - the values of secret header lines (X-Api-Key: ..., Authorization: ...,
//     *-Token: ..., Cookie: ...) and of secret fields of JSON arguments
//     ({"api_key": "..."});
//   - the passwords of well-known clients: mysql and mariadb -pPASS,
//     redis-cli -a PASS, curl -u user:PASS (also --user and -U), sshpass
//     -p PASS, docker (podman, nerdctl) login -p PASS;
//   - in any URL, the password of user:password@, a token as its user
//     (https://TOKEN@host: a user of 20 or more characters), the values
//     of secret query parameters (?api_key=, &token=, ?password=) and the
//     password of a query value that is itself user:password@host
//     (?addr=u:PW@h, well formed or not);
//   - anything shaped like a provider key (sk-..., sk-ant-..., ghp_...,
//     github_pat_..., xoxb-..., AKIA..., AIza..., hf_..., glpat-...,
//     sk_live_..., rk_test_...), JWTs (eyJ....eyJ....sig), Telegram bot
//     tokens (botID:TOKEN, as in api.telegram.org URLs), and the token
//     after "Bearer " or "Basic ";
//   - all of the above inside an argument of several words, such as the
//     script of sh -c 'KEY=x make' or ssh's remote command, word by word.
//     (A NAME=value argument with spaces that does not follow -c is taken
//     as one value and hidden whole: env 'PASSPHRASE=a b c'.)
//
// A name names a secret when its last word is one of key, token, secret,
// password, passwd, pass, pwd, passphrase, credential(s), auth,
// authorization, cookie, apikey, bearer, signature, sig, pat, jwt, or any of its words contains
// secret, password, passwd, apikey or credential. Words are split at '-',
// '_', '.' and camelCase, and matched case-insensitively, so --max-tokens,
// --tokenizer and KEYBOARD are shown. A name whose last word is file, path,
// dir, id, name, env or var names where a secret is, not the secret, and is
// shown (--key-file ~/.ssh/id, --password-file /run/pw, --token-env
// GH_TOKEN); so is a negated flag (--no-auth). Single-letter flags (-p,
// -k) are secret only for the clients listed.
func Args(args []string) string {
	out := words(args, 0)
	for i := range out {
		out[i] = quote(out[i])
	}
	return strings.Join(out, " ")
}

// Text returns s with the secrets Args hides in one argument hidden:
// provider keys, tokens after Bearer and Basic, URL passwords and secret
// query parameters, secret JSON fields, a secret header line, and, when s
// holds several words (a shell script), every secret Args finds in them.
func Text(s string) string { return text(s, 0) }

// URL returns raw with the password of its user:password part and the
// values of secret query parameters (password=, api_key=, token=, ...)
// replaced by Mark ("redis://u:***@host", "redis+sentinel://h?password=***").
// It works on malformed URLs too, so that error messages never print a
// password. A URL without a secret is returned unchanged.
func URL(raw string) string {
	return secretQuery(urlPassword(raw))
}

func urlPassword(raw string) string {
	prefix, rest := "", raw
	if i := strings.Index(raw, "://"); i >= 0 {
		prefix, rest = raw[:i+3], raw[i+3:]
	}
	end := len(rest)
	if _, err := url.Parse(raw); err == nil {
		// A valid URL's user info cannot hold '/', '?' or '#'; a
		// malformed one might, so there the last '@' anywhere counts.
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			end = j
		}
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		if isTokenUser(user) {
			return prefix + Mark + rest[at:]
		}
		return raw
	}
	return prefix + user + ":" + Mark + rest[at:]
}

// isTokenUser tells a URL's user that is a token (tokenUser).
func isTokenUser(user string) bool { return tokenUserRe().MatchString(user) }

var tokenUserRe = lazy(`^` + tokenUser + `$`)

// valuePassword hides the password of a query value that is itself
// user:password@host (a Cluster's or Sentinel's ?addr=, well formed or
// not).
func valuePassword(v string) (string, bool) {
	at := strings.LastIndexByte(v, '@')
	if at < 0 {
		return v, false
	}
	user, pw, ok := strings.Cut(v[:at], ":")
	if !ok || pw == "" || pw == Mark {
		return v, false
	}
	return user + ":" + Mark + v[at:], true
}

// queryParam matches one parameter of a URL query: its separator, name
// and value.
var queryParam = lazy(`([?&;])([A-Za-z0-9_.\-\[\]%]+)=([^&#\s"']*)`)

func secretQuery(s string) string {
	if !strings.ContainsAny(s, "?&") {
		return s
	}
	return queryParam().ReplaceAllStringFunc(s, func(m string) string {
		sub := queryParam().FindStringSubmatch(m)
		name := sub[2]
		if u, err := url.QueryUnescape(name); err == nil {
			name = u
		}
		if v, ok := valuePassword(sub[3]); ok {
			return sub[1] + sub[2] + "=" + v
		}
		if sub[3] == "" || sub[3] == Mark || !secretName(name) {
			return m
		}
		return sub[1] + sub[2] + "=" + Mark
	})
}

// words redacts the words of one command (or of several, joined by shell
// operators): out[i] is the shown form of args[i], unquoted.
func words(args []string, depth int) []string {
	out := make([]string, len(args))
	hide := 0                    // the next hide words are secret
	header := false              // they are the value of a header line
	var show func(string) string // shows the next word, if set
	program := ""                // the well-known client the words belong to, if any
	for i, a := range args {
		switch {
		case hide > 0:
			out[i] = Mark
			hide--
			if header && hide == 0 && authScheme(a) {
				hide = 1 // "Authorization: Token abc": the token is next
			}
			header = header && hide > 0
			continue
		case show != nil:
			out[i], show = show(a), nil
			continue
		case operators[a]:
			out[i], program = a, ""
			continue
		}
		if p := clientName(a); p != "" {
			program = p
		} else if program == "docker" && a == "login" {
			program = "docker login" // its -p is the password (elsewhere, a port)
		}
		var shown string
		if i == 0 || !shellFlag().MatchString(args[i-1]) || !strings.ContainsAny(a, " \t\n") {
			// Not a script: a NAME=value word's value may hold spaces.
			shown, hide, show = word(a, program)
			header = hide > 0 && strings.HasSuffix(a, ":")
		}
		if shown == "" {
			shown = text(a, depth)
		}
		out[i] = shown
	}
	return out
}

// word applies the rules for one word of a command: it returns the word
// as shown ("" to leave it to text), how many of the next words to hide,
// and a function to show the next word with ("" to leave it), if any.
func word(a, program string) (shown string, hideNext int, next func(string) string) {
	switch program {
	case "mysql":
		if v, ok := strings.CutPrefix(a, "-p"); ok && v != "" && !strings.HasPrefix(a, "--") {
			return "-p" + Mark, 0, nil
		}
	case "redis-cli":
		if a == "-a" {
			return a, 1, nil
		}
	case "docker login":
		if a == "-p" {
			return a, 1, nil
		}
		if v, ok := strings.CutPrefix(a, "-p"); ok && v != "" && !strings.HasPrefix(a, "--") {
			return "-p" + Mark, 0, nil
		}
	case "sshpass":
		if a == "-p" {
			return a, 1, nil
		}
		if v, ok := strings.CutPrefix(a, "-p"); ok && v != "" {
			return "-p" + Mark, 0, nil
		}
	case "curl":
		switch {
		case a == "-u" || a == "--user" || a == "-U" || a == "--proxy-user":
			return a, 0, userPassword
		case strings.HasPrefix(a, "--user=") || strings.HasPrefix(a, "--proxy-user="):
			name, v, _ := strings.Cut(a, "=")
			return name + "=" + userPassword(v), 0, nil
		case len(a) > 2 && (strings.HasPrefix(a, "-u") || strings.HasPrefix(a, "-U")) && a[1] != '-':
			return a[:2] + userPassword(a[2:]), 0, nil
		}
	}
	if isLongFlag(a) {
		dashes := "-"
		if strings.HasPrefix(a, "--") {
			dashes = "--"
		}
		name, value, hasValue := strings.Cut(a[len(dashes):], "=")
		switch {
		case !secretName(name):
			// --env=API_KEY=x, --from-literal=password=x
			if inner, _, ok := strings.Cut(value, "="); ok && envName().MatchString(inner) && secretName(inner) {
				return dashes + name + "=" + inner + "=" + Mark, 0, nil
			}
			return "", 0, nil
		case hasValue:
			return dashes + name + "=" + Mark, 0, nil
		default:
			return a, 1, nil
		}
	}
	if name, ok := strings.CutSuffix(a, ":"); ok && headerName().MatchString(name) && secretName(name) {
		return a, 1, nil // a header or YAML line split into words
	}
	if name, _, ok := strings.Cut(a, "="); ok && envName().MatchString(name) && secretName(name) {
		return name + "=" + Mark, 0, nil
	}
	return "", 0, nil
}

// userPassword hides the password of curl's user:password.
func userPassword(v string) string {
	user, _, ok := strings.Cut(v, ":")
	if !ok {
		return v // curl asks for the password
	}
	return user + ":" + Mark
}

// shellFlag is the flag before a shell's script: -c, -lc, -ec, ...
var shellFlag = lazy(`^-[A-Za-z]*c$`)

// operators separate commands in a script.
var operators = map[string]bool{";": true, "&&": true, "||": true, "|": true, "&": true, "(": true, ")": true, "\n": true}

// clientName returns the client whose password flags word names, or "".
func clientName(w string) string {
	base := filepath.Base(w)
	switch {
	case strings.HasPrefix(base, "mysql") || strings.HasPrefix(base, "mariadb"):
		return "mysql"
	case base == "redis-cli" || base == "valkey-cli" || base == "keydb-cli":
		return "redis-cli"
	case base == "curl" || base == "sshpass":
		return base
	case base == "docker" || base == "podman" || base == "nerdctl":
		return "docker"
	}
	return ""
}

func authScheme(w string) bool {
	switch strings.ToLower(w) {
	case "bearer", "basic", "token", "digest", "negotiate", "apikey", "key":
		return true
	}
	return false
}

// isLongFlag reports whether a is a flag with a name longer than one
// letter: --name, --name=value, and the single-dash -name of Go programs.
func isLongFlag(a string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
	return strings.HasPrefix(a, "-") && len(name) > 1 && !strings.ContainsAny(name, " \t\n")
}

// envName matches the name part of a NAME=value word; headerName the name
// of a header line.
var (
	envName    = lazy(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	headerName = lazy(`^[A-Za-z][A-Za-z0-9_-]*$`)
)

// secretName reports whether a flag, variable, header, query parameter or
// JSON field name names a secret (see Args).
func secretName(name string) bool {
	words := splitName(name)
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	if referenceWords[last] || (words[0] == "no" && len(words) > 1) {
		return false
	}
	if secretWords[last] {
		return true
	}
	for _, w := range words {
		for _, p := range secretParts {
			if strings.Contains(w, p) {
				return true
			}
		}
	}
	return false
}

// splitName splits a name into lower-case words at '-', '_', '.', spaces
// and camelCase humps: "X-Api-Key" and "accessToken" and "APIKey" give
// [x api key], [access token] and [api key].
func splitName(name string) []string {
	var words []string
	for _, part := range strings.FieldsFunc(name, func(r rune) bool {
		return r == '-' || r == '_' || r == '.' || r == ' '
	}) {
		rs := []rune(part)
		start := 0
		for i := 1; i < len(rs); i++ {
			lowerToUpper := unicode.IsLower(rs[i-1]) && unicode.IsUpper(rs[i])
			acronymEnd := i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i+1])
			if lowerToUpper || acronymEnd {
				words = append(words, strings.ToLower(string(rs[start:i])))
				start = i
			}
		}
		words = append(words, strings.ToLower(string(rs[start:])))
	}
	return words
}

var secretWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true,
	"password": true, "passwd": true, "pwd": true, "pass": true,
	"passphrase": true, "credential": true, "credentials": true,
	"auth": true, "authorization": true, "cookie": true, "bearer": true,
	"signature": true, "sig": true, // of a presigned URL (X-Amz-Signature, sig=)
	"pat": true, // a personal access token (--pat, GH_PAT)
	"jwt": true, // a JSON web token (--jwt, ID_JWT), whatever its shape
}

// secretParts are never innocent inside a word (SECRETKEY, MYPASSWORD).
var secretParts = []string{"secret", "password", "passwd", "apikey", "credential"}

// referenceWords end names of where a secret is, not of the secret.
var referenceWords = map[string]bool{
	"file": true, "path": true, "dir": true, "id": true, "name": true, "env": true, "var": true,
}

// secretPatterns match secrets inside any text.
var secretPatterns = []struct {
	re   func() *regexp.Regexp
	repl string
}{
	{lazy(`\bsk-[A-Za-z0-9_-]{16,}`), Mark}, // OpenAI, Anthropic (sk-ant-...)
	{lazy(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`), Mark},
	{lazy(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), Mark},                                 // Slack
	{lazy(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), Mark},                                   // AWS access key id
	{lazy(`\bAIza[0-9A-Za-z_-]{35}`), Mark},                                         // Google
	{lazy(`\bhf_[A-Za-z0-9]{30,}`), Mark},                                           // Hugging Face
	{lazy(`\bglpat-[A-Za-z0-9_-]{20,}`), Mark},                                      // GitLab
	{lazy(`\b[rs]k_(?:live|test)_[A-Za-z0-9]{10,}`), Mark},                          // Stripe
	{lazy(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), Mark}, // a JWT
	{lazy(`\b(bot)?[0-9]{6,}:[A-Za-z0-9_-]{30,}`), "$1" + Mark},                     // a Telegram bot token (api.telegram.org/botID:TOKEN)
	{lazy(`(?i)\b(bearer|basic)(\s+)[^\s"']+`), "$1$2" + Mark},                      // Authorization header
	// The password of scheme://user:password@host.
	{lazy(`\b([A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*):[^/@\s]+@`), "$1:" + Mark + "@"},
	// A token as the user of scheme://TOKEN@host, no password (git's
	// https://TOKEN@github.com).
	{lazy(`\b([A-Za-z][A-Za-z0-9+.-]*://)` + tokenUser + `@`), "${1}" + Mark + "@"},
}

// tokenUser is a URL's user that is taken for a token rather than a
// name: 20 or more of the characters tokens are made of.
const tokenUser = `[A-Za-z0-9_.~-]{20,}`

// jsonField matches a "name": value pair of JSON (the value a string or a
// scalar), also with escaped quotes as inside a shell's double quotes.
var jsonField = lazy(`(\\?")((?:[^"\\]|\\[^"])*)(\\?"\s*:\s*)(\\?"(?:[^"\\]|\\[^"])*\\?"|[^\s,{}\[\]"\\][^\s,}\]"\\]*)`)

// header matches a header line, alone or as the value of a flag
// (--header=Name: value).
var header = lazy(`^(\s*(?:-{1,2}[A-Za-z][\w-]*=)?)([A-Za-z][A-Za-z0-9_-]*)(\s*:\s*)(\S.*)$`)

// text redacts one argument: patterns anywhere in it, then, if it is a
// header line, its value, else, if it holds several words, each word.
func text(s string, depth int) string {
	for _, p := range secretPatterns {
		s = p.re().ReplaceAllString(s, p.repl)
	}
	s = secretQuery(s)
	if strings.Contains(s, `"`) {
		s = jsonField().ReplaceAllStringFunc(s, func(m string) string {
			sub := jsonField().FindStringSubmatch(m)
			if !secretName(sub[2]) || strings.Trim(sub[4], `\"`) == Mark {
				return m
			}
			q := ""
			if strings.HasSuffix(sub[4], `"`) {
				q = sub[1]
			}
			return sub[1] + sub[2] + sub[3] + q + Mark + q
		})
	}
	if m := header().FindStringSubmatch(s); m != nil && !strings.Contains(m[4], "\n") && secretName(m[2]) {
		return m[1] + m[2] + m[3] + Mark
	}
	if depth >= maxDepth || !strings.ContainsAny(s, " \t\n") {
		return s
	}
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return s // JSON: its fields are done above
	}
	return script(s, depth+1)
}

// script redacts the words of a shell script in place: the text between
// and around the words is kept, a changed word is quoted anew.
func script(s string, depth int) string {
	toks := lex(s)
	vals := make([]string, len(toks))
	for i, t := range toks {
		vals[i] = t.val
	}
	out := words(vals, depth)
	var b strings.Builder
	last := 0
	for i, t := range toks {
		if out[i] == vals[i] {
			continue
		}
		b.WriteString(s[last:t.start])
		b.WriteString(quote(out[i]))
		last = t.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// token is one word of a script: its value with the quoting removed, and
// where it is in the script.
type token struct {
	val        string
	start, end int
}

// lex splits a POSIX shell script into words and operators, as far as
// redaction needs: quotes, backslashes and the operators ; & | ( ) and
// newline. An unclosed quote runs to the end.
func lex(s string) []token {
	var toks []token
	var cur strings.Builder
	start, in := -1, false
	flush := func(end int) {
		if in {
			toks = append(toks, token{cur.String(), start, end})
			cur.Reset()
			in = false
		}
	}
	begin := func(i int) {
		if !in {
			start, in = i, true
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			flush(i)
		case c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')':
			flush(i)
			op := string(c)
			if (c == '&' || c == '|') && i+1 < len(s) && s[i+1] == c {
				op += string(c)
			}
			toks = append(toks, token{op, i, i + len(op)})
			i += len(op) - 1
		case c == '\\':
			begin(i)
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					cur.WriteByte(s[i])
				}
			}
		case c == '\'':
			begin(i)
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			begin(i)
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
		default:
			begin(i)
			cur.WriteByte(c)
		}
	}
	flush(len(s))
	return toks
}

// quote quotes s for a POSIX shell unless it needs no quoting. The asterisks
// of Mark are left bare, for readability.
func quote(s string) string {
	if s == "" {
		return "''"
	}
	if plainArg().MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var plainArg = lazy(`^[A-Za-z0-9_@%+=:,./*-]+$`)
