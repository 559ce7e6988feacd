package governor_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// A calendar window in the machine's local zone is refused: its day would
// differ from machine to machine, one budget with many definitions.
func TestBudgetWindowLocalRefused(t *testing.T) {
	w := governor.BudgetWindow{Calendar: "day", Location: time.Local}
	err := w.Validate()
	if !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), "local zone") {
		t.Fatalf("Validate of a day in time.Local: %v; want ErrInvalid naming the local zone", err)
	}
	loc, err := time.LoadLocation("Local")
	if err != nil {
		t.Fatal(err)
	}
	if err := (governor.BudgetWindow{Calendar: "month", Location: loc}).Validate(); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("Validate of a month in LoadLocation(\"Local\"): %v; want ErrInvalid", err)
	}
}

// Every name of UTC gives one definition, so two configs that spell UTC
// differently keep one budget; another zone keeps its own name.
func TestBudgetWindowUTCNamesAreOne(t *testing.T) {
	for _, name := range []string{"UTC", "Etc/UTC", "Etc/GMT", "GMT", "Zulu", "Etc/Universal"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		w := governor.BudgetWindow{Calendar: "day", Location: loc}
		if err := w.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := w.String(); got != "calendar day in UTC" {
			t.Errorf("window in %s says %q; want %q", name, got, "calendar day in UTC")
		}
	}
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	if got := (governor.BudgetWindow{Calendar: "day", Location: paris}).String(); got != "calendar day in Europe/Paris" {
		t.Errorf("window in Europe/Paris says %q", got)
	}
}
