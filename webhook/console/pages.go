package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// Page sizes.
const (
	eventsPerPage  = 50
	maxPayloadShow = 8 << 10
	maxRecentShown = 50
	// maxRecoverWindow is the longest time range one recover takes.
	maxRecoverWindow = 365 * 24 * time.Hour
)

// health is an endpoint with what its recent attempts say of it.
type health struct {
	*store.Endpoint
	Attempts, Succeeded        int
	Delivered, Pending, Failed int
	LastAttempt                time.Time
}

// Rate is the share of recent attempts that succeeded, in percent.
func (h *health) Rate() string {
	if h.Attempts == 0 {
		return "no attempts"
	}
	return fmt.Sprintf("%.0f%% of %d", 100*float64(h.Succeeded)/float64(h.Attempts), h.Attempts)
}

// State is "healthy", "failing" or "disabled".
func (h *health) State() string {
	switch {
	case !h.Enabled:
		return "disabled"
	case !h.FailingSince.IsZero():
		return "failing"
	}
	return "healthy"
}

// eventRow is an event with its deliveries, each with its attempts.
type eventRow struct {
	*store.Event
	Deliveries []*deliveryRow
}

type deliveryRow struct {
	*store.Delivery
	Attempts []*store.Attempt
}

// recent reads up to n events after the one created at before with id
// beforeID (before zero: from the newest; see store.Store.ListEvents),
// newest first, with their deliveries and attempts.
func (c *Console) recent(ctx context.Context, before time.Time, beforeID string, n int) ([]*eventRow, error) {
	evs, err := c.cfg.Store.ListEvents(ctx, before, beforeID, n)
	if err != nil {
		return nil, err
	}
	rows := make([]*eventRow, 0, len(evs))
	for _, ev := range evs {
		row, err := c.eventRow(ctx, ev)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func (c *Console) eventRow(ctx context.Context, ev *store.Event) (*eventRow, error) {
	ds, err := c.cfg.Store.ListDeliveries(ctx, ev.ID)
	if err != nil {
		return nil, err
	}
	as, err := c.cfg.Store.ListAttempts(ctx, ev.ID)
	if err != nil {
		return nil, err
	}
	row := &eventRow{Event: ev}
	for _, d := range ds {
		dr := &deliveryRow{Delivery: d}
		for _, a := range as {
			if a.DeliveryID == d.ID {
				dr.Attempts = append(dr.Attempts, a)
			}
		}
		row.Deliveries = append(row.Deliveries, dr)
	}
	return row, nil
}

// healths returns every endpoint with its health over rows.
func healths(eps []*store.Endpoint, rows []*eventRow) []*health {
	byID := map[string]*health{}
	out := make([]*health, 0, len(eps))
	for _, e := range eps {
		h := &health{Endpoint: e}
		byID[e.ID] = h
		out = append(out, h)
	}
	for _, row := range rows {
		for _, d := range row.Deliveries {
			h := byID[d.EndpointID]
			if h == nil {
				continue
			}
			switch d.Status {
			case store.StatusSucceeded:
				h.Delivered++
			case store.StatusPending, store.StatusPaused:
				h.Pending++
			case store.StatusFailed:
				h.Failed++
			}
			for _, a := range d.Attempts {
				h.Attempts++
				if a.StatusCode >= 200 && a.StatusCode < 300 {
					h.Succeeded++
				}
				if a.Started.After(h.LastAttempt) {
					h.LastAttempt = a.Started
				}
			}
		}
	}
	return out
}

func (c *Console) endpointsPage(w http.ResponseWriter, r *http.Request, v *visit) {
	eps, err := c.cfg.Store.ListEndpoints(r.Context())
	if err != nil {
		c.internal(w, "listing endpoints", err)
		return
	}
	rows, err := c.recent(r.Context(), time.Time{}, "", c.cfg.HealthEvents)
	if err != nil {
		c.internal(w, "reading recent events", err)
		return
	}
	c.page(w, v, "endpoints", "Endpoints", map[string]any{"Endpoints": healths(eps, rows), "Window": c.cfg.HealthEvents})
}

// attemptRow is an attempt with the event it belongs to.
type attemptRow struct {
	*store.Attempt
	EventType string
}

func (c *Console) endpointPage(w http.ResponseWriter, r *http.Request, v *visit) {
	e, err := c.cfg.Store.GetEndpoint(r.Context(), r.PathValue("id"))
	if err != nil {
		c.storeError(w, v, "reading the endpoint", err)
		return
	}
	rows, err := c.recent(r.Context(), time.Time{}, "", c.cfg.HealthEvents)
	if err != nil {
		c.internal(w, "reading recent events", err)
		return
	}
	h := healths([]*store.Endpoint{e}, rows)[0]
	var attempts []*attemptRow
	for _, row := range rows {
		for _, d := range row.Deliveries {
			if d.EndpointID != e.ID {
				continue
			}
			for i := len(d.Attempts) - 1; i >= 0 && len(attempts) < maxRecentShown; i-- {
				attempts = append(attempts, &attemptRow{Attempt: d.Attempts[i], EventType: row.Type})
			}
		}
	}
	now := c.cfg.Now().UTC()
	c.page(w, v, "endpoint", "Endpoint "+e.ID, map[string]any{"E": h, "Attempts": attempts, "Window": c.cfg.HealthEvents,
		"Since": now.Add(-24 * time.Hour).Format(formLayout), "Until": now.Add(time.Minute).Format(formLayout)})
}

func (c *Console) eventsPage(w http.ResponseWriter, r *http.Request, v *visit) {
	var before time.Time
	if b := r.URL.Query().Get("before"); b != "" {
		t, err := time.Parse(time.RFC3339Nano, b)
		if err != nil {
			c.problem(w, v, http.StatusBadRequest, fmt.Sprintf("before %q: want an RFC 3339 time", b))
			return
		}
		before = t
	}
	rows, err := c.recent(r.Context(), before, r.URL.Query().Get("before_id"), eventsPerPage)
	if err != nil {
		c.internal(w, "reading recent events", err)
		return
	}
	// The next page starts after the last event shown, its time and id:
	// by time alone, the events of that millisecond left off this page
	// would be on none.
	older := ""
	if len(rows) == eventsPerPage {
		last := rows[len(rows)-1]
		older = "/events?" + url.Values{"before": {last.Created.UTC().Format(time.RFC3339Nano)}, "before_id": {last.ID}}.Encode()
	}
	c.page(w, v, "events", "Events", map[string]any{"Events": rows, "Older": older})
}

func (c *Console) eventPage(w http.ResponseWriter, r *http.Request, v *visit) {
	ev, err := c.cfg.Store.GetEvent(r.Context(), r.PathValue("id"))
	if err != nil {
		c.storeError(w, v, "reading the event", err)
		return
	}
	row, err := c.eventRow(r.Context(), ev)
	if err != nil {
		c.internal(w, "reading the event's deliveries", err)
		return
	}
	c.page(w, v, "event", "Event "+ev.ID, map[string]any{"Ev": row, "Payload": showPayload(ev.Payload)})
}

// showPayload indents a JSON payload and cuts it to maxPayloadShow bytes.
func showPayload(p []byte) string {
	var buf bytes.Buffer
	if json.Indent(&buf, p, "", "  ") == nil {
		p = buf.Bytes()
	}
	if len(p) > maxPayloadShow {
		return string(p[:maxPayloadShow]) + fmt.Sprintf("\n… (%d bytes in all)", len(p))
	}
	return string(p)
}

// Buttons.

func (c *Console) setEnabled(enable bool) func(http.ResponseWriter, *http.Request, *visit) {
	return func(w http.ResponseWriter, r *http.Request, v *visit) {
		id := r.PathValue("id")
		var (
			msg     string
			changed bool
		)
		// Read and written in one transaction: a change made meanwhile
		// (the dispatcher recorded its health or disabled it) is never
		// undone by a stale copy, nor makes the button give up. (f may
		// run again: it sets msg and changed from scratch.)
		_, err := c.cfg.Store.ChangeEndpoint(r.Context(), id, func(e *store.Endpoint) error {
			msg = fmt.Sprintf("Endpoint %s was already %s.", id, map[bool]string{true: "enabled", false: "disabled"}[enable])
			changed = false
			if e.Enabled == enable {
				return errUnchanged
			}
			e.Enabled = enable
			if enable {
				e.DisabledReason, e.FailingSince = "", time.Time{}
				msg = fmt.Sprintf("Endpoint %s enabled.", id)
			} else {
				e.DisabledReason = "disabled in the console"
				msg = fmt.Sprintf("Endpoint %s disabled: it gets no new events and no attempts until enabled.", id)
			}
			e.Updated = c.cfg.Now()
			changed = true
			return nil
		})
		if err != nil && !errors.Is(err, errUnchanged) {
			c.storeError(w, v, "updating the endpoint", err)
			return
		}
		if changed && enable {
			c.cfg.Notify()
		}
		c.done(w, r, v, "/endpoints/"+id, msg)
	}
}

// errUnchanged is what setEnabled's change returns to write nothing.
var errUnchanged = errors.New("console: endpoint unchanged")

// formLayout is the value of an <input type="datetime-local">.
const formLayout = "2006-01-02T15:04"

// parseFormTime reads a time from a form: datetime-local (taken as UTC)
// or RFC 3339.
func parseFormTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{formLayout, "2006-01-02T15:04:05", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want a time such as 2026-11-30T14:00 (UTC) or RFC 3339", s)
}

func (c *Console) recoverEndpoint(w http.ResponseWriter, r *http.Request, v *visit) {
	id := r.PathValue("id")
	since, err := parseFormTime(r.PostForm.Get("since"))
	if err != nil {
		c.problem(w, v, http.StatusBadRequest, "since: "+err.Error())
		return
	}
	now := c.cfg.Now()
	until := now
	if u := r.PostForm.Get("until"); strings.TrimSpace(u) != "" {
		if until, err = parseFormTime(u); err != nil {
			c.problem(w, v, http.StatusBadRequest, "until: "+err.Error())
			return
		}
	}
	if !since.Before(until) || until.Sub(since) > maxRecoverWindow {
		c.problem(w, v, http.StatusBadRequest, fmt.Sprintf("since %s, until %s: want since before until, at most %v apart",
			since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339), maxRecoverWindow))
		return
	}
	if _, err := c.cfg.Store.GetEndpoint(r.Context(), id); err != nil {
		c.storeError(w, v, "reading the endpoint", err)
		return
	}
	n, err := c.cfg.Store.Recover(r.Context(), id, since, until, now)
	if err != nil {
		c.storeError(w, v, "recovering deliveries", err)
		return
	}
	if n > 0 {
		c.cfg.Notify()
	}
	c.done(w, r, v, "/endpoints/"+id, fmt.Sprintf("%d failed deliveries to %s (events from %s to %s UTC) scheduled again.",
		n, id, since.UTC().Format("2006-01-02 15:04"), until.UTC().Format("2006-01-02 15:04")))
}

func (c *Console) resend(w http.ResponseWriter, r *http.Request, v *visit) {
	id := r.PathValue("id")
	ep := r.PostForm.Get("endpoint_id")
	if ep != "" {
		if _, err := c.cfg.Store.GetEndpoint(r.Context(), ep); err != nil {
			c.storeError(w, v, "reading the endpoint", err)
			return
		}
	}
	n, err := c.cfg.Store.Resend(r.Context(), id, ep, c.cfg.Now())
	if err != nil {
		c.storeError(w, v, "resending the event", err)
		return
	}
	if n > 0 {
		c.cfg.Notify()
	}
	c.done(w, r, v, "/events/"+id, fmt.Sprintf("Event %s: %d deliveries scheduled again.", id, n))
}

// done ends a button's POST: the message for the next page, and a
// redirect to the form's "back" path when it is one of ours, else to def.
func (c *Console) done(w http.ResponseWriter, r *http.Request, v *visit, def, msg string) {
	c.setFlash(v, msg)
	to := def
	if b := r.PostForm.Get("back"); localPath(b) {
		to = b
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// localPath reports whether back is a path of this site: one leading
// '/', no backslash (browsers read it as '/') and no control character
// (browsers drop TAB, CR and LF, so "/\t/evil.example/" reads as
// "//evil.example/").
func localPath(back string) bool {
	if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") || strings.Contains(back, "\\") {
		return false
	}
	for i := 0; i < len(back); i++ {
		if back[i] < 0x20 || back[i] == 0x7f {
			return false
		}
	}
	return true
}

// Rendering.

var funcs = template.FuncMap{
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	"ms": func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) },
	"cut": func(n int, b []byte) string {
		if len(b) > n {
			return string(b[:n]) + "…"
		}
		return string(b)
	},
	"ok":  func(code int) bool { return code >= 200 && code < 300 },
	"inc": func(i int) int { return i + 1 },
	// dict makes a map of key, value pairs, for a sub-template.
	"dict": func(kv ...any) (map[string]any, error) {
		if len(kv)%2 != 0 {
			return nil, errors.New("dict: odd number of arguments")
		}
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			k, ok := kv[i].(string)
			if !ok {
				return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
			}
			m[k] = kv[i+1]
		}
		return m, nil
	},
}

func (c *Console) page(w http.ResponseWriter, v *visit, name, title string, data map[string]any) {
	data["Title"] = title
	data["CSRF"] = v.csrf
	data["Flash"] = v.flash
	data["Session"] = v.sess != nil
	data["Body"] = name
	c.render(w, http.StatusOK, name, data)
}

func (c *Console) render(w http.ResponseWriter, code int, name string, data any) {
	var buf bytes.Buffer
	if err := c.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		c.internal(w, "rendering "+name, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

func (c *Console) problem(w http.ResponseWriter, v *visit, code int, msg string) {
	c.render(w, code, "problem", map[string]any{"Title": http.StatusText(code), "Problem": msg, "CSRF": v.csrf, "Session": v.sess != nil})
}

func (c *Console) storeError(w http.ResponseWriter, v *visit, doing string, err error) {
	if errors.Is(err, store.ErrNotFound) {
		c.problem(w, v, http.StatusNotFound, strings.TrimPrefix(err.Error(), "store: "))
		return
	}
	c.internal(w, doing, err)
}

func (c *Console) internal(w http.ResponseWriter, doing string, err error) {
	c.cfg.Logger.Error("webhook console", "doing", doing, "err", err)
	http.Error(w, "internal error", http.StatusInternalServerError)
}
