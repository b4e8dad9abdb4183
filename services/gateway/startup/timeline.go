// Package startup shows where startup time went across every instance: when each reached
// each state and signal, and how long each post-start hook took. It serves /debug/startup
// (JSON, or a self-contained HTML timeline) and the startup metrics.
package startup

import (
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/pkg/topology"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Timeline is the JSON document.
type Timeline struct {
	// Origin is the earliest instance start; every offset is from it.
	Origin    time.Time          `json:"origin"`
	Instances []InstanceTimeline `json:"instances"`
}

// InstanceTimeline is one process's startup.
type InstanceTimeline struct {
	Service    string          `json:"service"`
	InstanceID string          `json:"instance"`
	StartedAt  time.Time       `json:"startedAt"`
	StartMs    float64         `json:"startMs"`
	ReadyMs    *float64        `json:"readyMs,omitempty"`
	States     []PointTimeline `json:"states"`
	Signals    []PointTimeline `json:"signals"`
	Hooks      []HookTimeline  `json:"hooks"`
}

// PointTimeline is a named moment.
type PointTimeline struct {
	Name string  `json:"name"`
	AtMs float64 `json:"atMs"`
}

// HookTimeline is a post-start hook's run; EndMs and DurationMs are absent while it runs.
type HookTimeline struct {
	Name       string   `json:"name"`
	StartMs    float64  `json:"startMs"`
	EndMs      *float64 `json:"endMs,omitempty"`
	DurationMs *float64 `json:"durationMs,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// States lists the lifecycle states to show, one per instance.
type States func() []*lifecyclev1.InstanceState

// Build lays out the instances' startups from one origin, the earliest process start.
func Build(states []*lifecyclev1.InstanceState) Timeline {
	var t Timeline
	for _, st := range states {
		if s := st.GetStartedAt().AsTime(); st.GetStartedAt() != nil && (t.Origin.IsZero() || s.Before(t.Origin)) {
			t.Origin = s
		}
	}
	ms := func(ts *timestamppb.Timestamp) float64 {
		return float64(ts.AsTime().Sub(t.Origin).Microseconds()) / 1000
	}
	for _, st := range states {
		it := InstanceTimeline{Service: st.GetService(), InstanceID: st.GetInstanceId(), StartedAt: st.GetStartedAt().AsTime(),
			StartMs: ms(st.GetStartedAt()), States: []PointTimeline{}, Signals: []PointTimeline{}, Hooks: []HookTimeline{}}
		for _, tr := range st.GetTransitions() {
			it.States = append(it.States, PointTimeline{Name: server.State(tr.GetState()).String(), AtMs: ms(tr.GetAt())})
			if tr.GetState() == lifecyclev1.State_STATE_RUNNING && it.ReadyMs == nil {
				v := ms(tr.GetAt())
				it.ReadyMs = &v
			}
		}
		for _, s := range st.GetSignals() {
			it.Signals = append(it.Signals, PointTimeline{Name: s.GetName(), AtMs: ms(s.GetAt())})
		}
		sort.Slice(it.Signals, func(i, j int) bool { return it.Signals[i].AtMs < it.Signals[j].AtMs })
		for _, h := range st.GetHooks() {
			ht := HookTimeline{Name: h.GetName(), Error: h.GetError()}
			if h.GetStartedAt() != nil {
				ht.StartMs = ms(h.GetStartedAt())
			}
			if h.GetFinishedAt() != nil {
				end := ms(h.GetFinishedAt())
				d := end - ht.StartMs
				ht.EndMs, ht.DurationMs = &end, &d
			}
			it.Hooks = append(it.Hooks, ht)
		}
		sort.Slice(it.Hooks, func(i, j int) bool { return it.Hooks[i].StartMs < it.Hooks[j].StartMs })
		t.Instances = append(t.Instances, it)
	}
	sort.SliceStable(t.Instances, func(i, j int) bool {
		a, b := t.Instances[i], t.Instances[j]
		if ra, rb := topology.Rank(a.Service), topology.Rank(b.Service); ra != rb {
			return ra < rb
		}
		return a.InstanceID < b.InstanceID
	})
	return t
}

// Handler serves the timeline as JSON, or as a self-contained HTML page (no external assets)
// when the client asks for text/html or ?format=html.
func Handler(states States, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(w, r, Build(states()), log) })
}

func serve(w http.ResponseWriter, r *http.Request, t Timeline, log *slog.Logger) {
	if r.URL.Query().Get("format") == "html" || strings.Contains(r.Header.Get("Accept"), "text/html") {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := startupPage.Execute(w, pageData(t)); err != nil {
			log.Warn("render startup page", "err", err)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(t)
}

type bar struct {
	Label, Title, Class string
	Left, Width         float64 // percent of the page's time span
}

type row struct {
	Service, Instance string
	Bars              []bar
}

type tick struct {
	Label string
	Left  float64
}

type page struct {
	SpanMs float64
	Rows   []row
	Ticks  []tick
}

// pageData lays the timeline out as percentages of the total span, so the page needs no
// script: one row per instance (its life until ready) and one per hook.
func pageData(t Timeline) page {
	span := 1.0
	for _, it := range t.Instances {
		for _, h := range it.Hooks {
			if h.EndMs != nil && *h.EndMs > span {
				span = *h.EndMs
			}
		}
		if it.ReadyMs != nil && *it.ReadyMs > span {
			span = *it.ReadyMs
		}
	}
	pct := func(v float64) float64 { return v / span * 100 }
	var p page
	p.SpanMs = span
	for i := 0; i < 4; i++ {
		p.Ticks = append(p.Ticks, tick{Label: fmt.Sprintf("%.0f ms", span*float64(i)/4), Left: float64(i) * 25})
	}
	for _, it := range t.Instances {
		end := span
		if it.ReadyMs != nil {
			end = *it.ReadyMs
		}
		p.Rows = append(p.Rows, row{Service: it.Service, Instance: it.InstanceID, Bars: []bar{{
			Label: "until ready", Class: "life", Left: pct(it.StartMs), Width: pct(end - it.StartMs),
			Title: fmt.Sprintf("%s %s: started at %.0f ms, ready at %.0f ms", it.Service, it.InstanceID, it.StartMs, end)}}})
		for _, h := range it.Hooks {
			b := bar{Label: h.Name, Class: "hook", Left: pct(h.StartMs)}
			switch {
			case h.Error != "":
				b.Class, b.Width, b.Title = "failed", pct(*h.EndMs-h.StartMs), fmt.Sprintf("%s failed after %.1f ms: %s", h.Name, *h.DurationMs, h.Error)
			case h.EndMs != nil:
				b.Width, b.Title = pct(*h.DurationMs), fmt.Sprintf("%s: %.1f ms", h.Name, *h.DurationMs)
			default:
				b.Class, b.Width, b.Title = "running", pct(span-h.StartMs), h.Name+": not finished"
			}
			p.Rows = append(p.Rows, row{Service: it.Service, Instance: "poststarthook/" + h.Name, Bars: []bar{b}})
		}
	}
	return p
}

var startupPage = template.Must(template.New("startup").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>apichain startup timeline</title>
<style>
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
table{border-collapse:collapse;width:100%}
td{padding:2px 6px;white-space:nowrap}
td.track{width:70%;position:relative;height:18px;border-left:1px solid #ccc}
.b{position:absolute;top:3px;height:12px;min-width:2px;border-radius:2px}
.life{background:#cfd8dc}.hook{background:#42a5f5}.running{background:#ffb300}.failed{background:#e53935}
.svc{font-weight:600}.ticks{color:#777}
</style></head><body>
<h1>Startup timeline</h1>
<p>Total span {{printf "%.0f" .SpanMs}} ms from the first process start. Hover a bar for details.</p>
<table>
<tr class="ticks"><td></td><td></td><td class="track">{{range .Ticks}}<span style="position:absolute;left:{{printf "%.0f" .Left}}%">{{.Label}}</span>{{end}}</td></tr>
{{range .Rows}}<tr><td class="svc">{{.Service}}</td><td>{{.Instance}}</td><td class="track">{{range .Bars}}<div class="b {{.Class}}" style="left:{{printf "%.4f" .Left}}%;width:{{printf "%.4f" .Width}}%" title="{{.Title}}"></div>{{end}}</td></tr>
{{end}}</table></body></html>
`))
