package config

import (
	"reflect"
	"strings"
	"testing"
)

// Every key of the schema reads a field of Config that Show can write: a
// key added to one and not the other, or a field of a type formatValue
// does not know, fails here instead of being shown empty.
func TestShowReadsEveryKey(t *testing.T) {
	for _, key := range leafKeys(root, nil) {
		v := reflect.ValueOf(Config{})
		for _, part := range key {
			switch v.Kind() {
			case reflect.Struct:
				v = fieldTagged(v, part)
			case reflect.Map:
				v = reflect.Zero(v.Type().Elem())
			}
			if !v.IsValid() {
				t.Fatalf("%s: no field of Config has the tag %q", strings.Join(key, "."), part)
			}
		}
		if _, ok := formatValue(v); !ok {
			t.Errorf("%s: Show cannot write a %s", strings.Join(key, "."), v.Type())
		}
	}
}
