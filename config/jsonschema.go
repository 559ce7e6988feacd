package config

import (
	"encoding/json"
	"slices"
)

// SchemaID is the $id of the JSON Schema of exec-defaults.yaml, and
// SchemaFile its copy in the repository (config/exec-defaults.schema.json),
// which editors read through a first line such as
//
//	# yaml-language-server: $schema=https://raw.githubusercontent.com/governor-dev/governor/main/config/exec-defaults.schema.json
const (
	SchemaID   = "https://raw.githubusercontent.com/governor-dev/governor/main/config/exec-defaults.schema.json"
	SchemaFile = "exec-defaults.schema.json"
)

// durationPattern is Go's duration syntax (time.ParseDuration), which
// every duration key takes.
const durationPattern = `^\s*[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)\s*$`

// amountPattern is an amount in units written as a string (Amount).
const amountPattern = `^\s*([0-9]{1,10}(\.[0-9]{0,6})?|\.[0-9]{1,6})\s*$`

// JSONSchema returns the JSON Schema (draft 2020-12) of exec-defaults.yaml,
// made from the one schema Load walks: the same keys, each with the
// shape of its value. What the schema cannot say (a limit's range, a
// policy's spelling, a name's characters) stays Load's to check; an editor
// using it sees unknown keys and wrong shapes as they are typed.
func JSONSchema() []byte {
	s := jsonSchema(root)
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["$id"] = SchemaID
	s["title"] = "governor exec-defaults.yaml"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err) // maps of strings and bools only: cannot fail
	}
	return append(b, '\n')
}

func jsonSchema(s *schema) map[string]any {
	switch s.kind {
	case kindSection:
		props := map[string]any{}
		for _, k := range sortedKeys(s.fields) {
			props[k] = jsonSchema(s.fields[k])
		}
		return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	case kindNamed:
		return map[string]any{"type": "object", "additionalProperties": jsonSchema(s.entry)}
	case kindList:
		return map[string]any{"type": "array", "items": map[string]any{"type": slices.Clone(scalarTypes)}}
	case kindInt:
		return map[string]any{"type": "integer"}
	case kindBool:
		return map[string]any{"type": "boolean"}
	case kindDuration:
		return map[string]any{"type": "string", "pattern": durationPattern}
	case kindAmount:
		return map[string]any{"anyOf": []any{
			map[string]any{"type": "number", "minimum": 0},
			map[string]any{"type": "string", "pattern": amountPattern},
		}}
	}
	return map[string]any{"type": "string"}
}

// scalarTypes are what a list's items may be: a YAML scalar of any kind.
var scalarTypes = []string{"boolean", "integer", "null", "number", "string"}
