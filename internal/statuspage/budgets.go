package statuspage

import (
	"context"
	"errors"
	"net/http"

	"github.com/governor-dev/governor/internal/view"
)

// budgets serves what 'governor budgets --json' prints, for the budgets
// named by ?budget= (all when none is): those with state and those
// configured.
func (p *Page) budgets(w http.ResponseWriter, r *http.Request) {
	bs, ok := p.src.(view.BudgetSource)
	if !ok {
		writeAPIError(w, http.StatusNotImplemented, errors.New("this source keeps no spend budgets"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	names := r.URL.Query()["budget"]
	sts, now, err := bs.Budgets(ctx, names)
	if err != nil {
		writeAPIError(w, readStatus(err), err)
		return
	}
	conf := p.budgetConf
	if len(names) > 0 {
		conf = map[string]view.BudgetConfig{}
		for _, n := range names {
			if c, ok := p.budgetConf[n]; ok {
				conf[n] = c
			}
		}
	}
	writeAPI(w, http.StatusOK, view.BudgetsWith(sts, now, conf))
}
