package statuspage

import (
	"context"
	"errors"
	"net/http"

	"github.com/governor-dev/governor/internal/view"
)

// budgets serves what 'governor budgets --json' prints, for the budgets
// named by ?budget= (all when none is).
func (p *Page) budgets(w http.ResponseWriter, r *http.Request) {
	bs, ok := p.src.(view.BudgetSource)
	if !ok {
		writeAPIError(w, http.StatusNotImplemented, errors.New("this source keeps no spend budgets"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	sts, now, err := bs.Budgets(ctx, r.URL.Query()["budget"])
	if err != nil {
		writeAPIError(w, readStatus(err), err)
		return
	}
	writeAPI(w, http.StatusOK, view.BudgetsOf(sts, now))
}
