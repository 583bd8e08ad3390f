/*
Copyright The Waterline Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Chart geometry: every chart is an SVG of ChartWidth × ChartHeight
// pixels whose plot area is inset by the margins.
const (
	ChartWidth   = 900
	ChartHeight  = 300
	marginLeft   = 70
	marginRight  = 20
	marginTop    = 50
	marginBottom = 42
)

// Colours of the scenarios, apart for the common colour-vision
// deficiencies; markers of actions.
var (
	scenarioColor = map[string]string{
		Alone: "#4e79a7", Kubernetes: "#e15759", Waterline: "#59a14f", WaterlineNoThrottle: "#f28e2b", WaterlineMemory: "#9c755f", BatchAlone: "#b07aa1",
	}
	actionColor = map[string]string{ActionThrottle: "#17becf", ActionEvict: "#222222", ActionRestore: "#bcbd22"}
)

type line struct {
	name, color string
	xs, ys      []float64
}

type marker struct {
	x     float64
	color string
}

// plot is a line chart; logX draws x on a log scale, nines draws y (a
// fraction) on the "nines" scale of tail latency plots: 0, 90 %, 99 %,
// 99.9 %, 99.99 %.
type plot struct {
	id, title, xLabel, yLabel string
	lines                     []line
	markers                   []marker
	logX, nines               bool
}

const maxNines = 4

func ninesOf(f float64) float64 {
	if f >= 1 {
		return maxNines
	}
	return math.Min(maxNines, -math.Log10(1-f))
}

func (p *plot) svg() string {
	var b strings.Builder
	plotW := float64(ChartWidth - marginLeft - marginRight)
	plotH := float64(ChartHeight - marginTop - marginBottom)
	tx := func(v float64) float64 {
		if p.logX {
			return math.Log10(math.Max(v, 1e-9))
		}
		return v
	}
	ty := func(v float64) float64 {
		if p.nines {
			return ninesOf(v)
		}
		return v
	}
	xMin, xMax, yMax := math.Inf(1), math.Inf(-1), 0.0
	for _, l := range p.lines {
		for i := range l.xs {
			xMin, xMax = math.Min(xMin, tx(l.xs[i])), math.Max(xMax, tx(l.xs[i]))
			yMax = math.Max(yMax, ty(l.ys[i]))
		}
	}
	if math.IsInf(xMin, 0) {
		xMin, xMax = 0, 1
	}
	if p.logX {
		xMin, xMax = math.Floor(xMin), math.Ceil(xMax)
	} else {
		xMin = math.Min(xMin, 0)
	}
	if xMax <= xMin {
		xMax = xMin + 1
	}
	if p.nines {
		yMax = maxNines
	} else {
		yMax = niceCeil(yMax * 1.05)
	}
	X := func(v float64) float64 { return marginLeft + (tx(v)-xMin)/(xMax-xMin)*plotW }
	Y := func(v float64) float64 { return marginTop + plotH - ty(v)/yMax*plotH }

	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" id="%s" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="sans-serif" font-size="12">`,
		p.id, ChartWidth, ChartHeight, ChartWidth, ChartHeight, html.EscapeString(p.title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`, ChartWidth, ChartHeight)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`, marginLeft, html.EscapeString(p.title))
	// y grid.
	for i := 0; i <= 4; i++ {
		v := yMax * float64(i) / 4
		yy := marginTop + plotH - float64(i)/4*plotH
		label := trimFloat(v)
		if p.nines {
			label = []string{"0%", "90%", "99%", "99.9%", "99.99%"}[i]
		}
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#dddddd"/>`, marginLeft, marginLeft+plotW, yy, yy)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, marginLeft-6, yy+4, label)
	}
	// x ticks.
	if p.logX {
		for d := xMin; d <= xMax; d++ {
			xx := marginLeft + (d-xMin)/(xMax-xMin)*plotW
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#dddddd"/>`, xx, xx, marginTop, marginTop+plotH)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xx, marginTop+plotH+16, trimFloat(math.Pow(10, d)))
		}
	} else {
		step := niceCeil((xMax - xMin) / 6)
		for v := math.Ceil(xMin/step) * step; v <= xMax+1e-9; v += step {
			xx := X(v)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xx, marginTop+plotH+16, trimFloat(v))
		}
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, marginLeft+plotW/2, ChartHeight-6, html.EscapeString(p.xLabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">%s</text>`, marginTop+plotH/2, html.EscapeString(p.yLabel))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#888888"/>`, marginLeft, marginTop, plotW, plotH)
	// Action markers: ticks along the top of the plot.
	for _, m := range p.markers {
		if tx(m.x) < xMin || tx(m.x) > xMax {
			continue // e.g. an action during the warmup, before the load
		}
		xx := X(m.x)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="3"/>`, xx, xx, marginTop, marginTop+14, m.color)
	}
	for _, l := range p.lines {
		if len(l.xs) == 0 {
			continue
		}
		var pts []string
		for i := range l.xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", X(l.xs[i]), math.Max(marginTop, Y(l.ys[i]))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2.5" points="%s"/>`, l.color, strings.Join(pts, " "))
	}
	// Legend.
	lx := float64(marginLeft)
	for _, l := range p.lines {
		fmt.Fprintf(&b, `<rect x="%.1f" y="28" width="14" height="10" fill="%s"/><text x="%.1f" y="37">%s</text>`, lx, l.color, lx+18, html.EscapeString(l.name))
		lx += 28 + 7*float64(len(l.name))
	}
	if len(p.markers) > 0 {
		for _, k := range []string{ActionThrottle, ActionEvict} {
			fmt.Fprintf(&b, `<rect x="%.1f" y="28" width="4" height="10" fill="%s"/><text x="%.1f" y="37">%s</text>`, lx, actionColor[k], lx+8, k)
			lx += 18 + 7*float64(len(k))
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
