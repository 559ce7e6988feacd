package supervise

import (
	"regexp"
	"strings"
)

// Redacted replaces a secret in the output of Redact.
const Redacted = "***"

// Redact joins a command line for display, with secrets replaced by
// Redacted and arguments quoted for a POSIX shell where needed. It hides:
//
//   - the value of a flag whose name ends in a secret word (--api-key,
//     --token, --password, --client-secret, --github-token, ...), in both
//     the "--flag value" and the "--flag=value" forms;
//   - the value of a NAME=value argument whose name is secret in the same
//     sense (OPENAI_API_KEY=..., key=..., DB_PASSWORD=...);
//   - anything shaped like a provider key (sk-..., sk-ant-..., ghp_...,
//     github_pat_..., xoxb-..., AKIA..., AIza..., hf_..., glpat-...), the
//     token after "Bearer " or "Basic ", and the password of a URL.
//
// Names are matched case-insensitively and word by word, so --max-tokens
// and TOKENIZER=... are shown while --token and HF_TOKEN are not. Single
// letter flags (-p) are never treated as secret.
func Redact(args []string) string {
	out := make([]string, len(args))
	hideNext := false
	for i, a := range args {
		switch {
		case hideNext:
			out[i] = Redacted
			hideNext = false
		case isLongFlag(a):
			dashes := "-"
			if strings.HasPrefix(a, "--") {
				dashes = "--"
			}
			name, _, hasValue := strings.Cut(a[len(dashes):], "=")
			switch {
			case !secretName(name):
				out[i] = quote(redactText(a))
			case hasValue:
				out[i] = quote(dashes+name+"=") + Redacted
			default:
				out[i] = quote(a)
				hideNext = true
			}
		default:
			name, _, hasValue := strings.Cut(a, "=")
			if hasValue && envName.MatchString(name) && secretName(name) {
				out[i] = quote(name+"=") + Redacted
			} else {
				out[i] = quote(redactText(a))
			}
		}
	}
	return strings.Join(out, " ")
}

// isLongFlag reports whether a is a flag with a name longer than one
// letter: --name, --name=value, and the single-dash -name of Go programs.
func isLongFlag(a string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
	return strings.HasPrefix(a, "-") && len(name) > 1
}

// envName matches the name part of a NAME=value argument.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// secretName reports whether a flag or variable name names a secret: its
// last word is one of secretWords, or a word contains one of secretParts.
func secretName(name string) bool {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return r == '-' || r == '_' || r == '.'
	})
	if len(words) == 0 {
		return false
	}
	if secretWords[words[len(words)-1]] {
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

var secretWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true,
	"password": true, "passwd": true, "pwd": true, "pass": true,
	"passphrase": true, "credential": true, "credentials": true,
	"auth": true, "authorization": true, "cookie": true,
}

// secretParts are never innocent inside a word (SECRETKEY, MYPASSWORD).
var secretParts = []string{"secret", "password", "passwd", "apikey", "credential"}

// secretPatterns match secrets inside any argument.
var secretPatterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`), Redacted}, // OpenAI, Anthropic (sk-ant-...)
	{regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`), Redacted},
	{regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), Redacted},       // Slack
	{regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), Redacted},         // AWS access key id
	{regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), Redacted},               // Google
	{regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`), Redacted},                 // Hugging Face
	{regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`), Redacted},            // GitLab
	{regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)\S+`), "$1$2" + Redacted}, // Authorization header
	// The password of scheme://user:password@host.
	{regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*):[^/@\s]+@`), "$1:" + Redacted + "@"},
}

func redactText(s string) string {
	for _, p := range secretPatterns {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return s
}

// quote quotes s for a POSIX shell unless it needs no quoting. The asterisks
// of Redacted are left bare, for readability.
func quote(s string) string {
	if s == "" {
		return "''"
	}
	if plainArg.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var plainArg = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./*-]+$`)
