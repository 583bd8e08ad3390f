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
	ChartWidth   = 760
	ChartHeight  = 280
	marginLeft   = 64
	marginRight  = 16
	marginTop    = 52
	marginBottom = 40
)

// series is one line of a chart.
type series struct {
	name  string
	color string
	dash  bool
	// style, when set, draws the line with its own width and dashes, so
	// that policies whose lines overlap stay visible (see policyStyle).
	style *lineStyle
	ys    []float64
}

// stroke is how l is drawn: its width and its stroke-dasharray attribute
// (empty for a solid line). The legend draws the same dashes.
func (l *series) stroke() (width float64, dash string) {
	width = 2.0
	if l.dash {
		dash = ` stroke-dasharray="6 4"`
	}
	if l.style != nil {
		width = l.style.width
		if l.style.dashes != "" && !l.dash {
			dash = ` stroke-dasharray="` + l.style.dashes + `"`
		}
	}
	return width, dash
}

// chart is a line chart over a shared x axis.
type chart struct {
	id     string
	title  string
	yLabel string
	xs     []float64 // hours
	lines  []series
	// yMax, when positive, fixes the top of the y axis.
	yMax float64
}

// Colours of the policies and the chart lines, chosen to stay apart for
// the common colour-vision deficiencies.
var palette = []string{"#4e79a7", "#e15759", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2"}

// svg renders c as a standalone SVG document fragment (no XML header), so
// it can be inlined in HTML or written to a file as is.
func (c *chart) svg() string {
	var b strings.Builder
	plotW := float64(ChartWidth - marginLeft - marginRight)
	plotH := float64(ChartHeight - marginTop - marginBottom)
	xMin, xMax := 0.0, 1.0
	if len(c.xs) > 0 {
		xMin, xMax = c.xs[0], c.xs[len(c.xs)-1]
	}
	if xMax <= xMin {
		xMax = xMin + 1
	}
	yMax := c.yMax
	if yMax <= 0 {
		for _, l := range c.lines {
			for _, y := range l.ys {
				if !math.IsNaN(y) && y > yMax {
					yMax = y
				}
			}
		}
		yMax = niceCeil(yMax)
	}
	x := func(v float64) float64 { return marginLeft + (v-xMin)/(xMax-xMin)*plotW }
	y := func(v float64) float64 { return marginTop + plotH - v/yMax*plotH }

	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="sans-serif" font-size="12">`,
		ChartWidth, ChartHeight, ChartWidth, ChartHeight, html.EscapeString(c.title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`, ChartWidth, ChartHeight)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`, marginLeft, html.EscapeString(c.title))

	// Grid and y ticks.
	const yTicks = 5
	for i := 0; i <= yTicks; i++ {
		v := yMax * float64(i) / yTicks
		py := y(v)
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/>`, marginLeft, marginLeft+plotW, py, py)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`, marginLeft-6, py+4, tickLabel(v))
	}
	// X ticks every few hours.
	step := niceStep((xMax - xMin) / 8)
	for v := math.Ceil(xMin/step) * step; v <= xMax+1e-9; v += step {
		px := x(v)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#f0f0f0"/>`, px, px, marginTop, marginTop+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%sh</text>`, px, marginTop+plotH+16, tickLabel(v))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%.1f" stroke="#333"/>`, marginLeft, marginLeft, marginTop, marginTop+plotH)
	fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`, marginLeft, marginLeft+plotW, marginTop+plotH, marginTop+plotH)
	fmt.Fprintf(&b, `<text x="14" y="%.1f" transform="rotate(-90 14 %.1f)" text-anchor="middle" fill="#333">%s</text>`,
		marginTop+plotH/2, marginTop+plotH/2, html.EscapeString(c.yLabel))
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333">hours since start</text>`, marginLeft+plotW/2, ChartHeight-4)

	// Lines.
	for _, l := range c.lines {
		var pts strings.Builder
		for i, v := range l.ys {
			if i >= len(c.xs) || math.IsNaN(v) {
				continue
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(c.xs[i]), y(math.Min(v, yMax)))
		}
		width, dash := l.stroke()
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="%.1f" stroke-linejoin="round"%s points="%s"/>`, l.color, width, dash, strings.TrimSpace(pts.String()))
	}
	// Legend, under the title.
	lx := float64(marginLeft)
	for _, l := range c.lines {
		_, dash := l.stroke()
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="36" y2="36" stroke="%s" stroke-width="3"%s/>`, lx, lx+22, l.color, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="40" fill="#333">%s</text>`, lx+26, html.EscapeString(l.name))
		lx += 40 + 7*float64(len(l.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// lineStyle is how a policy's line is drawn.
type lineStyle struct {
	width  float64
	dashes string
}

// policyStyle gives policy i of n its line: the first drawn is the
// widest and solid, each later one thinner and dashed differently, so a
// line drawn over another leaves it showing at the edges and in its gaps.
func policyStyle(i, n int) *lineStyle {
	dashes := []string{"", "10 4", "3 3", "12 3 3 3"}
	return &lineStyle{width: 1.5 + 1.5*float64(n-1-i), dashes: dashes[i%len(dashes)]}
}

// niceCeil rounds v up to 1, 2 or 5 × a power of ten (and 1 for v ≤ 0).
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// niceStep rounds v to 1, 2, 3, 6 or 12 × a power of ten -- hours read
// best in those.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 3, 6, 12} {
		if v <= m*p {
			return m * p
		}
	}
	return 12 * p
}

func tickLabel(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
