package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// setting is one value from one source.
type setting struct {
	path   []string
	value  any // string, int, time.Duration or []string
	raw    string
	source Source
	line   int    // SourceFile
	origin string // SourceEnv, SourceFlag: "env GOVERNOR_…", "flag --…"
}

// fileLayer is what parseFile found in a config file.
type fileLayer struct {
	settings []*setting
	lines    map[string]int // dotted key (also sections, named entries, "lock_order[i]") -> line
	entries  [][]string     // every providers.<name> and resources.<name>, valid names only
	broken   map[string]bool
	problems []*FieldError
}

// yamlLine matches the errors of go.yaml.in/yaml/v3 that carry a line;
// compiled at its first use (a file that does not parse), not at every
// start of the binary.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`) })

// parseFile checks data against the schema and returns its settings. It
// parses with yaml.v3 itself, before viper, to have line numbers.
func parseFile(file string, data []byte) *fileLayer {
	w := &walker{fileLayer: fileLayer{lines: map[string]int{}, broken: map[string]bool{}}, file: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) { // io.EOF: an empty file
			w.syntaxError(err, data)
		}
		return &w.fileLayer
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case errors.Is(err, io.EOF):
	case err != nil:
		w.syntaxError(err, data)
		return &w.fileLayer
	case !isEmpty(&second):
		w.problem(second.Line, "", "", "the file holds more than one YAML document (a second '---'); put everything in one")
		return &w.fileLayer
	}
	if !isEmpty(&doc) {
		w.walk(doc.Content[0], nil, root)
	}
	return &w.fileLayer
}

// isEmpty tells whether a document holds nothing, or only comments.
func isEmpty(doc *yaml.Node) bool {
	if len(doc.Content) == 0 {
		return true
	}
	n := doc.Content[0]
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

type walker struct {
	fileLayer
	file string
}

func (w *walker) syntaxError(err error, data []byte) {
	line, msg := syntaxLine(err, data)
	w.problem(line, "", "", "YAML syntax error: "+msg)
}

// syntaxLine returns the 1-based line of a yaml.v3 syntax error (0 if
// unknown) and its message. yaml.v3 prints a parser error's line 0-based
// and a scanner error's 1-based, and no line at all when the 0-based line
// is 0.
func syntaxLine(err error, data []byte) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		if isParserProblem(m[2]) {
			line++
		}
		if m[2] == "did not find expected key" {
			// yaml.v3 names the line of the mapping the bad key broke,
			// which may be lines above it: name the misindented line.
			line = max(line, misindented(data, line))
		}
		return line, m[2]
	}
	switch {
	case strings.HasPrefix(msg, "unknown anchor '"):
		name, _, _ := strings.Cut(strings.TrimPrefix(msg, "unknown anchor '"), "'")
		return lineOf(data, func(rest []byte) bool { return bytes.HasPrefix(rest, []byte("*"+name)) }), msg
	case strings.Contains(msg, "control characters") || strings.Contains(msg, "UTF-8") || strings.Contains(msg, "UTF-16"):
		return lineOf(data, func(rest []byte) bool {
			r, size := utf8.DecodeRune(rest)
			return (r == utf8.RuneError && size == 1) || (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f
		}), msg
	case strings.Contains(msg, "alias") || strings.Contains(msg, "anchor"):
		return 0, msg
	}
	return 1, msg
}

// misindented returns the 1-based line, from line from on, of the first
// key indented as no open block is: deeper than the line before without
// that line opening a block, or back out to a depth no block above has.
// 0 when there is none.
func misindented(data []byte, from int) int {
	open := []int{0} // the depths of the blocks the line before is in
	deeper := false  // the line before opens a block
	for i, text := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(text)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		n := len(text) - len(strings.TrimLeft(text, " "))
		top := open[len(open)-1]
		bad := false
		switch {
		case n > top && deeper:
			open = append(open, n)
		case n > top:
			bad = true
		default:
			for len(open) > 1 && open[len(open)-1] > n {
				open = open[:len(open)-1]
			}
			bad = open[len(open)-1] != n
		}
		if bad && i+1 >= from {
			return i + 1
		}
		if rest, ok := strings.CutPrefix(t, "- "); ok && !bad {
			open = append(open, n+2) // a list item's mapping goes on at its content's depth
			t = rest
		}
		deeper = strings.HasSuffix(t, ":") || strings.HasSuffix(t, "|") || strings.HasSuffix(t, ">") ||
			strings.HasSuffix(t, "|-") || strings.HasSuffix(t, ">-") || t == "-"
	}
	return 0
}

// isParserProblem tells the problems yaml.v3's parser reports (those of
// parserc.go) from its scanner's.
func isParserProblem(msg string) bool {
	return strings.HasPrefix(msg, "did not find expected") ||
		strings.HasPrefix(msg, "found duplicate %") ||
		msg == "found incompatible YAML document" ||
		msg == "found undefined tag handle"
}

// lineOf returns the 1-based line of the first position in data where at
// is true, or 0.
func lineOf(data []byte, at func(rest []byte) bool) int {
	line := 1
	for i := 0; i < len(data); {
		if at(data[i:]) {
			return line
		}
		if data[i] == '\n' {
			line++
		}
		_, size := utf8.DecodeRune(data[i:])
		i += size
	}
	return 0
}

func (w *walker) problem(line int, key, value, msg string) {
	w.problems = append(w.problems, &FieldError{File: w.file, Line: line, Key: key, Value: RedactURL(value), Msg: msg})
}

// broke reports a key whose value could not be read, and marks it
// broken: the checks built on it then say nothing more.
func (w *walker) broke(line int, key, value, msg string) {
	w.problem(line, key, value, msg)
	w.broken[key] = true
}

// walk checks n, found at path, against s.
func (w *walker) walk(n *yaml.Node, path []string, s *schema) {
	line := n.Line
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	key := dotted(path)
	if key != "" {
		w.lines[key] = line
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // "key:" with nothing after it: not set
	}
	switch s.kind {
	case kindSection, kindNamed:
		if n.Kind != yaml.MappingNode {
			what := "must be"
			if key == "" {
				what = "the top level must be"
			}
			w.problem(line, key, n.Value, fmt.Sprintf("%s a mapping (key: value lines), not %s; %s", what, describe(n), allowed(s, path)))
			w.brokenBelow(path)
			return
		}
		w.walkMapping(n, path, s)
	case kindList:
		w.list(n, line, path)
	default:
		w.scalar(n, line, path, s.kind)
	}
}

func (w *walker) walkMapping(n *yaml.Node, path []string, s *schema) {
	seen := map[string]int{}      // key -> line
	folded := map[string]string{} // lower-case name -> name, for named sections
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		child := append(slices.Clone(path), name)
		ckey := dotted(child)
		if k.Kind != yaml.ScalarNode {
			w.problem(k.Line, dotted(path), "", fmt.Sprintf("a key must be a plain word, not %s", describe(k)))
			continue
		}
		if k.Tag == "!!merge" {
			w.problem(k.Line, dotted(path), "<<", "YAML merge keys (<<) are not supported; write the keys out")
			continue
		}
		if first, dup := seen[name]; dup {
			w.broke(k.Line, ckey, "", fmt.Sprintf("defined twice (first at line %d)", first))
			continue
		}
		seen[name] = k.Line
		if s.kind == kindNamed {
			if other, dup := folded[strings.ToLower(name)]; dup {
				w.problem(k.Line, ckey, name, fmt.Sprintf("%q and %q (line %d) differ only in case; names in %s must differ in more than case", name, other, seen[other], dotted(path)))
				continue
			}
			folded[strings.ToLower(name)] = name
			if msg := nameProblem(name, resourceName(path[0], name)); msg != "" {
				w.problem(k.Line, dotted(path), name, msg)
				continue
			}
			w.entries = append(w.entries, child)
			w.walk(v, child, s.entry)
			w.lines[ckey] = k.Line
			continue
		}
		fs := s.fields[name]
		if fs == nil {
			msg := "unknown key"
			if sug := suggest(child, sortedKeys(s.fields)); sug != "" {
				msg += fmt.Sprintf("; did you mean %s?", sug)
			}
			w.problem(k.Line, ckey, "", msg+" ("+allowed(s, path)+")")
			continue
		}
		w.walk(v, child, fs)
		w.lines[ckey] = k.Line
	}
}

func (w *walker) scalar(n *yaml.Node, line int, path []string, k kind) {
	key := dotted(path)
	if n.Kind != yaml.ScalarNode {
		w.broke(line, key, "", fmt.Sprintf("must be a single value, not %s", describe(n)))
		return
	}
	s := &setting{path: path, raw: n.Value, source: SourceFile, line: line}
	var msg string
	switch k {
	case kindString:
		if n.Value == "" {
			return // empty means not set
		}
		s.value = n.Value
	case kindInt:
		var i int
		if n.Tag != "!!int" || n.Decode(&i) != nil {
			msg = fmt.Sprintf("%s is not a whole number", quoteScalar(n))
		}
		s.value = i
	case kindDuration:
		if n.Tag == "!!int" || n.Tag == "!!float" {
			msg = fmt.Sprintf("%s has no unit; write a duration such as %ss", n.Value, n.Value)
		} else {
			s.value, msg = parseDuration(n.Value)
		}
	case kindBool:
		var b bool
		if n.Tag != "!!bool" || n.Decode(&b) != nil {
			msg = fmt.Sprintf("%s is not true or false", quoteScalar(n))
		}
		s.value = b
	case kindAmount:
		s.value, msg = parseAmount(n.Value)
	}
	if msg != "" {
		w.broke(line, key, n.Value, msg)
		return
	}
	w.settings = append(w.settings, s)
}

func (w *walker) list(n *yaml.Node, line int, path []string) {
	key := dotted(path)
	if n.Kind != yaml.SequenceNode {
		w.broke(line, key, n.Value, fmt.Sprintf("must be a list such as [issue, plan], not %s", describe(n)))
		return
	}
	items := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		ekey := fmt.Sprintf("%s[%d]", key, i)
		w.lines[ekey] = e.Line
		if e.Kind == yaml.AliasNode {
			e = e.Alias
		}
		if e.Kind != yaml.ScalarNode {
			w.broke(e.Line, ekey, "", fmt.Sprintf("must be a single value, not %s", describe(e)))
			return
		}
		if e.Tag == "!!null" {
			items = append(items, "")
			continue
		}
		items = append(items, e.Value)
	}
	w.settings = append(w.settings, &setting{path: path, value: items, raw: strings.Join(items, ","), source: SourceFile, line: line})
}

// brokenBelow marks every key at or below path as unreadable, so that
// Validate does not also complain about the defaults that stand in.
func (w *walker) brokenBelow(path []string) {
	prefix := dotted(path)
	for _, k := range leafKeys(root, nil) {
		if d := dotted(k); prefix == "" || d == prefix || strings.HasPrefix(d, prefix+".") {
			w.broken[d] = true
		}
	}
}

// allowed lists the keys s takes, for messages.
func allowed(s *schema, path []string) string {
	where := "at the top level"
	if len(path) > 0 {
		where = "under " + dotted(path)
	}
	if s.kind == kindNamed {
		return fmt.Sprintf("each entry under %s is a name with keys: %s", dotted(path), strings.Join(sortedKeys(s.entry.fields), ", "))
	}
	return fmt.Sprintf("allowed %s: %s", where, strings.Join(sortedKeys(s.fields), ", "))
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %s", quoteScalar(n))
	}
	return "an alias"
}

func quoteScalar(n *yaml.Node) string {
	if n.Tag == "!!str" {
		return quote(n.Value)
	}
	return RedactURL(n.Value)
}

// parseDuration parses a duration, returning a message naming s if it is
// not one.
func parseDuration(s string) (time.Duration, string) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Sprintf("%s is not a duration; write a number with a unit, such as 30s, 1m30s or 500ms", quote(s))
	}
	return d, ""
}

// resourceName is the resource a provider or resource name defines.
func resourceName(section, name string) string {
	if section == "providers" {
		return ProviderResourcePrefix + name
	}
	return name
}
