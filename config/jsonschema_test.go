package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/governor-dev/governor/config"
)

// The schema in the repository is the one the code makes: regenerate it
// with `go run ./cmd/governor config schema > config/exec-defaults.schema.json`.
func TestJSONSchemaFileIsTheCode(t *testing.T) {
	file, err := os.ReadFile(config.SchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, config.JSONSchema()) {
		t.Fatalf("config/%s differs from config.JSONSchema(): regenerate it with\n  go run ./cmd/governor config schema > config/%s", config.SchemaFile, config.SchemaFile)
	}
}

// Every exec-defaults.yaml example of README and docs/ validates against
// the schema, and so do the examples of the tests' own configs below; a
// config with an unknown key or a wrong shape does not.
func TestJSONSchemaValidatesTheDocsExamples(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal(config.JSONSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob("../docs/*.md")
	pages = append(pages, "../README.md")
	block := regexp.MustCompile("(?s)\n```yaml\n(.*?)\n```\n")
	n := 0
	for _, p := range pages {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllStringSubmatch(string(text), -1) {
			n++
			if err := validateYAML(schema, m[1]); err != nil {
				t.Errorf("%s: an example does not validate against the schema: %v\n%s", p, err, m[1])
			}
		}
	}
	if n == 0 {
		t.Fatal("no yaml example found in README or docs/")
	}
	for _, bad := range []string{
		"projcet: x\n",                           // unknown key
		"lease:\n  ttl: 30\n",                    // a duration without a unit
		"resources:\n  heavy:\n    limit: one\n", // not a whole number
		"resources:\n  heavy:\n    limitt: 1\n",  // unknown key of an entry
		"lock_order: issue\n",                    // a list given as a string
	} {
		if validateYAML(schema, bad) == nil {
			t.Errorf("the schema accepts %q", bad)
		}
	}
}

func validateYAML(schema map[string]any, text string) error {
	var doc any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return err
	}
	return validate(schema, doc, "")
}

// validate checks v against the part of JSON Schema that JSONSchema uses:
// type, properties, additionalProperties, items, pattern.
func validate(s map[string]any, v any, at string) error {
	if !hasType(s["type"], v) {
		return fmt.Errorf("%s: %v (%T) is not of type %v", at, v, v, s["type"])
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for k, e := range v {
			if ps, ok := props[k].(map[string]any); ok {
				if err := validate(ps, e, at+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: unknown key %q", at, k)
				}
			case map[string]any:
				if err := validate(ap, e, at+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range v {
				if err := validate(items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case string:
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			return fmt.Errorf("%s: %q does not match %s", at, v, p)
		}
	}
	return nil
}

func hasType(t any, v any) bool {
	var types []string
	switch t := t.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			types = append(types, e.(string))
		}
	default:
		return true
	}
	for _, ty := range types {
		switch v.(type) {
		case map[string]any:
			if ty == "object" {
				return true
			}
		case []any:
			if ty == "array" {
				return true
			}
		case string:
			if ty == "string" {
				return true
			}
		case bool:
			if ty == "boolean" {
				return true
			}
		case int, int64, uint64:
			if ty == "integer" || ty == "number" {
				return true
			}
		case float64:
			if ty == "number" {
				return true
			}
		case nil:
			if ty == "null" {
				return true
			}
		}
	}
	return false
}
