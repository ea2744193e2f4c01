package statsd

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/statsd_exporter/pkg/mapper"
)

// Family types of the exposition.
const (
	promCounter   = "counter"
	promGauge     = "gauge"
	promHistogram = "histogram"
	promSummary   = "summary"
)

// promKind is the kind of statsd key a name is computed for.
type promKind uint8

const (
	kindCounter promKind = iota
	kindGauge
	kindSet
	kindTimer
	numKinds
)

// mapperType is the metric type a statsd_exporter mapping matches:
// sets match as gauges (statsd_exporter has no sets).
var mapperType = [numKinds]mapper.MetricType{mapper.MetricTypeCounter, mapper.MetricTypeGauge,
	mapper.MetricTypeGauge, mapper.MetricTypeObserver}

// promLabel is one label of a series.
type promLabel struct{ name, value string }

// promNaming is how one statsd key of one kind is exposed. It is
// computed once and kept while the key is flushed.
type promNaming struct {
	// drop: the mapping's action is drop; empty: no valid name.
	drop, empty bool
	// family is the family's name and typ its type (promCounter, ...).
	family, typ string
	// labels, sorted by name, and their rendering `a="x",b="y"`.
	labels   []promLabel
	labelStr string
	// help is the mapping's help text, if any.
	help string
	// scale multiplies the values (the mapping's scale); 1 without.
	scale float64
	// buckets (histograms) and quantiles (summaries) of a timer.
	buckets, quantiles []float64
	// gen is the last flush that used the naming.
	gen uint64
}

// naming computes how key is exposed, as statsd_exporter would name the
// same metric: the name escaped by its rules (every character outside
// [a-zA-Z0-9_] becomes '_', a leading digit gains a '_'), tags as
// labels, and a mapping's name, labels, help, scale, observer type,
// buckets and quantiles when one matches.
func (p *Prometheus) naming(kind promKind, key string) *promNaming {
	name, tags, _ := strings.Cut(key, ";")
	n := &promNaming{scale: 1}
	labels := tagLabels(tags)
	var mapping *mapper.MetricMapping
	if p.mapper != nil {
		m, mlabels, ok := p.mapper.GetMapping(name, mapperType[kind])
		if ok && m != nil {
			mapping = m
			if m.Action == mapper.ActionTypeDrop {
				n.drop = true
				return n
			}
			name = m.Name
			n.help = m.HelpText
			if m.Scale.Set {
				n.scale = m.Scale.Val
			}
			labels = mergeLabels(labels, mlabels, m.HonorLabels)
		}
	}
	base := escapeName(name)
	if base == "" {
		n.empty = true
		return n
	}
	switch kind {
	case kindCounter:
		n.typ = promCounter
		n.family = base
		if !strings.HasSuffix(base, "_total") {
			n.family = base + "_total"
		}
	case kindGauge, kindSet:
		n.typ, n.family = promGauge, base
	case kindTimer:
		n.family = base
		n.typ, n.buckets, n.quantiles = p.observer(mapping)
		if k := len(n.buckets); k > 0 && math.IsInf(n.buckets[k-1], 1) {
			n.buckets = n.buckets[:k-1] // the +Inf bucket is always there
		}
	}
	n.labels = finishLabels(labels)
	n.labelStr = renderLabels(n.labels)
	return n
}

// escapeName is statsd_exporter's mapper.EscapeMetricName, on valid
// UTF-8 only: on an invalid byte it slices out of range and panics
// (statsd_exporter v0.31.0, escape.go).
func escapeName(s string) string {
	return mapper.EscapeMetricName(strings.ToValidUTF8(s, "_"))
}

// tagLabels turns a key's tags ("k=v;flag;...") into labels: a bare tag
// is flag="true", a tag with an empty name or value is left out (it
// would be no label), names are escaped as metric names are.
func tagLabels(tags string) []promLabel {
	var out []promLabel
	for tags != "" {
		var tag string
		tag, tags, _ = strings.Cut(tags, ";")
		k, v, ok := strings.Cut(tag, "=")
		if !ok {
			v = "true"
		}
		k = escapeName(k)
		if k == "" || v == "" {
			continue
		}
		out = append(out, promLabel{k, strings.ToValidUTF8(v, "\uFFFD")})
	}
	return out
}

// mergeLabels adds a mapping's labels to the tags' as statsd_exporter
// does: the mapping's win, unless honor is set (honor_labels).
func mergeLabels(tags []promLabel, mapped map[string]string, honor bool) []promLabel {
	for k, v := range mapped {
		i := slices.IndexFunc(tags, func(l promLabel) bool { return l.name == k })
		switch {
		case i < 0:
			tags = append(tags, promLabel{k, strings.ToValidUTF8(v, "\uFFFD")})
		case !honor:
			tags[i].value = strings.ToValidUTF8(v, "\uFFFD")
		}
	}
	return tags
}

// finishLabels renames the label names the exposition reserves ("__"
// prefixes, le and quantile, which promtool refuses on any family) to
// "tag_...", drops empty values and repeated names (the first kept),
// and sorts.
func finishLabels(ls []promLabel) []promLabel {
	out := ls[:0]
	seen := make(map[string]bool, len(ls))
	for _, l := range ls {
		if strings.HasPrefix(l.name, "__") || l.name == "le" || l.name == "quantile" {
			l.name = "tag_" + l.name
		}
		if l.value == "" || seen[l.name] {
			continue
		}
		seen[l.name] = true
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b promLabel) int { return strings.Compare(a.name, b.name) })
	return out
}

// renderLabels writes labels as the text format does, without braces.
func renderLabels(ls []promLabel) string {
	var b strings.Builder
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.name)
		b.WriteString(`="`)
		b.WriteString(promLabelValue(l.value))
		b.WriteByte('"')
	}
	return b.String()
}

var labelValueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func promLabelValue(s string) string { return labelValueEscaper.Replace(s) }

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// promHelp makes s a HELP text: valid UTF-8, escaped.
func promHelp(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return helpEscaper.Replace(s)
}

// observer returns the family type, buckets and quantiles of a timer:
// the mapping's observer_type and options where the mapping file sets
// them, else the backend's.
func (p *Prometheus) observer(m *mapper.MetricMapping) (typ string, buckets, quantiles []float64) {
	typ, buckets, quantiles = p.cfg.Timers, p.cfg.Buckets, p.cfg.Quantiles
	if p.mapper != nil {
		switch p.mapper.Defaults.ObserverType {
		case mapper.ObserverTypeHistogram:
			typ = promHistogram
		case mapper.ObserverTypeSummary:
			typ = promSummary
		}
		if p.fileBuckets {
			buckets = p.mapper.Defaults.HistogramOptions.Buckets
		}
		if p.fileQuantiles {
			quantiles = objectives(p.mapper.Defaults.SummaryOptions.Quantiles)
		}
	}
	if m == nil {
		return typ, buckets, quantiles
	}
	switch m.ObserverType {
	case mapper.ObserverTypeHistogram:
		typ = promHistogram
		if o := m.HistogramOptions; o != nil && len(o.Buckets) > 0 && (p.fileBuckets || !slices.Equal(o.Buckets, p.mapper.Defaults.HistogramOptions.Buckets)) {
			buckets = o.Buckets
		}
	case mapper.ObserverTypeSummary:
		typ = promSummary
		if o := m.SummaryOptions; o != nil && len(o.Quantiles) > 0 && (p.fileQuantiles || !slices.Equal(o.Quantiles, p.mapper.Defaults.SummaryOptions.Quantiles)) {
			quantiles = objectives(o.Quantiles)
		}
	}
	return typ, buckets, quantiles
}

func objectives(os []mapper.MetricObjective) []float64 {
	q := make([]float64, len(os))
	for i, o := range os {
		q[i] = o.Quantile
	}
	return q
}
