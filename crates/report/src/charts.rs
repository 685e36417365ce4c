//! Charts of the HTML report, drawn as inline SVG by `plotters`.
//!
//! Owns the mapping from a small chart description (`LineChart`) to SVG text and its
//! HTML legend. Rules every chart follows:
//!
//! * a title, a y axis label that names the unit, and a legend (also for one series);
//! * only series with at least one finite point are drawn, and only drawn series are in
//!   the legend;
//! * a missing sample is a NaN y value and breaks the line (a zero is drawn as zero);
//! * series differ by colour *and* by line style and marker shape, so they can be told
//!   apart without colour; markers are hollow so points that coincide stay visible;
//! * an x axis can be log₂ (client counts), labelled with the powers of two.
//!
//! A chart with no finite point still renders (an empty frame with a "no data"
//! caption) so a page never breaks on a test that produced nothing.

use plotters::prelude::*;

/// Line style of a series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Dash {
    /// Continuous.
    #[default]
    Solid,
    /// Medium dashes.
    Dashed,
    /// Dots.
    Dotted,
    /// Long dashes.
    LongDash,
}

impl Dash {
    /// The n-th style of a cycle (for percentiles: p50 solid, p90 dashed, p99 dotted…).
    pub fn nth(i: usize) -> Dash {
        [Dash::Solid, Dash::Dashed, Dash::Dotted, Dash::LongDash][i % 4]
    }

    /// SVG `stroke-dasharray` of the line and its legend swatch.
    fn dasharray(self) -> &'static str {
        match self {
            Dash::Solid => "none",
            Dash::Dashed => "6 3",
            Dash::Dotted => "2 3",
            Dash::LongDash => "12 4",
        }
    }
}

/// Marker shape drawn on each point of a series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Marker {
    /// No marker.
    #[default]
    None,
    /// Hollow circle.
    Circle,
    /// Hollow square.
    Square,
    /// Hollow triangle.
    Triangle,
    /// Cross.
    Cross,
}

impl Marker {
    /// The n-th marker of a cycle (one per target).
    pub fn nth(i: usize) -> Marker {
        [
            Marker::Circle,
            Marker::Square,
            Marker::Triangle,
            Marker::Cross,
        ][i % 4]
    }
}

/// One line of a chart, optionally with a shaded band (e.g. min–max of repeats).
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in x order; a NaN y is a missing sample and breaks the line.
    pub points: Vec<(f64, f64)>,
    /// Optional band: (x, low, high).
    pub band: Vec<(f64, f64, f64)>,
    /// Colour index into the palette; None = the series' position.
    pub color: Option<usize>,
    /// Line style.
    pub dash: Dash,
    /// Marker shape.
    pub marker: Marker,
}

impl Series {
    /// A solid line without markers.
    pub fn line(name: &str, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            ..Default::default()
        }
    }

    /// Whether the series has a point to draw.
    pub fn is_drawn(&self) -> bool {
        self.points
            .iter()
            .any(|p| p.0.is_finite() && p.1.is_finite())
    }

    /// The runs of consecutive finite points: what is drawn as separate lines.
    pub fn segments(&self) -> Vec<Vec<(f64, f64)>> {
        let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
        let mut cur = Vec::new();
        for &(x, y) in &self.points {
            if x.is_finite() && y.is_finite() {
                cur.push((x, y));
            } else if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    }
}

/// Scale of the x axis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum XScale {
    /// Linear.
    #[default]
    Linear,
    /// Log₂ (values must be positive; ticks at powers of two).
    Log2,
}

/// A line chart with a numeric x axis.
#[derive(Debug, Clone, Default)]
pub struct LineChart {
    /// Caption above the plot.
    pub title: String,
    /// X axis description.
    pub x_label: String,
    /// Y axis description, with its unit.
    pub y_label: String,
    /// Lines to draw.
    pub series: Vec<Series>,
    /// X positions marked by a vertical dashed line (e.g. checkpoints).
    pub markers: Vec<f64>,
    /// Label of the markers in the legend.
    pub marker_label: String,
    /// Plot y from zero (throughput) rather than from the data minimum.
    pub y_from_zero: bool,
    /// Scale of the x axis.
    pub x_scale: XScale,
    /// A line under the chart (what was left out, how values were made).
    pub note: String,
    /// X range to show whatever the data (e.g. the whole test on a time axis).
    pub x_bounds: Option<(f64, f64)>,
    /// An x range shaded behind the data (e.g. a run's warm-up), with its legend label.
    pub shade: Option<(f64, f64, String)>,
    /// An x range marked behind the data as a failure (a run's outage: no commit
    /// acknowledged), with its legend label; drawn a few pixels wide however short.
    pub outage: Option<(f64, f64, String)>,
}

const WIDTH: u32 = 720;
const HEIGHT: u32 = 340;

/// Colors of successive series: readable on white, distinguishable for most viewers.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The fill of a shaded x range (a warm-up): light, under the grid's grey.
const SHADE: RGBColor = RGBColor(236, 236, 236);

/// The fill of an outage: a light red, told from the warm-up's grey.
const OUTAGE: RGBColor = RGBColor(250, 200, 200);

/// The narrowest an outage is drawn, in pixels of the chart's width (the plot,
/// inside the axes, is a little narrower).
const OUTAGE_MIN_PX: f64 = 4.0;

/// The colour of the grid lines (and its hex spelling in plotters' SVG).
const GRID: RGBColor = RGBColor(228, 228, 228);
const GRID_HEX: &str = "E4E4E4";

/// The stroke width that marks a series line drawn with `dash` until [`compact_svg`]
/// gives it its dash pattern (widths no other element of a chart uses).
fn dash_marker_width(dash: Dash) -> u32 {
    match dash {
        Dash::Solid => 2,
        Dash::Dashed => 17,
        Dash::Dotted => 18,
        Dash::LongDash => 19,
    }
}

/// plotters' SVG without what repeats on every element and changes nothing: full
/// opacity (the default), the font family (the page's style sets it for every chart)
/// and font sizes with fifteen decimals; dashed series lines get their dash pattern.
fn compact_svg(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(at) = rest.find(" font-size=\"") {
        out.push_str(&rest[..at]);
        let value_start = at + " font-size=\"".len();
        let Some(len) = rest[value_start..].find('"') else {
            rest = &rest[at..];
            break;
        };
        let value = &rest[value_start..value_start + len];
        match value.parse::<f64>() {
            Ok(v) => out.push_str(&format!(" font-size=\"{v:.1}\"")),
            Err(_) => out.push_str(&rest[at..value_start + len + 1]),
        }
        rest = &rest[value_start + len + 1..];
    }
    out.push_str(rest);
    let mut out = out
        .replace(" opacity=\"1\"", "")
        .replace(" font-family=\"sans-serif\"", "")
        // Black is SVG's default fill; axes and ticks, and grid lines, take their look
        // from the page's style (`.k`, `.g`) instead of repeating it on every element.
        .replace(
            " fill=\"none\" stroke=\"#000000\" stroke-width=\"1\"",
            " class=\"k\"",
        )
        .replace(" fill=\"#000000\"", "")
        .replace(
            &format!(" stroke=\"#{GRID_HEX}\" stroke-width=\"1\""),
            " class=\"g\"",
        );
    for dash in [Dash::Dashed, Dash::Dotted, Dash::LongDash] {
        out = out.replace(
            &format!(" stroke-width=\"{}\"", dash_marker_width(dash)),
            &format!(
                " stroke-width=\"2\" stroke-dasharray=\"{}\"",
                dash.dasharray()
            ),
        );
    }
    out
}

/// Color of series number `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Axis label text: no trailing `.0`, at most 3 significant decimals, SI suffixes for
/// large values.
fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", short(v / 1e9))
    } else if a >= 1e6 {
        format!("{}M", short(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", short(v / 1e3))
    } else if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        // Three significant digits, also for small values (0.00042, not 0).
        let decimals = if a >= 1.0 {
            3
        } else {
            ((-a.log10().floor()) as usize + 2).min(9)
        };
        let s = format!("{v:.decimals$}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Tick positions of the x axis: whole numbers for integral and log₂ axes (thinned to
/// at most 12), else a 1-2-5 step giving about 8 ticks.
fn x_ticks((lo, hi): (f64, f64), integral: bool) -> Vec<f64> {
    let span = hi - lo;
    if span.is_nan() || span <= 0.0 || !lo.is_finite() || !hi.is_finite() {
        return vec![lo];
    }
    let step = if integral {
        (span / 12.0).ceil().max(1.0)
    } else {
        let raw = span / 8.0;
        let mag = 10f64.powf(raw.log10().floor());
        [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag)
    };
    let mut out = Vec::new();
    let mut v = (lo / step).ceil() * step;
    while v <= hi + step * 1e-9 && out.len() < 50 {
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    out
}

fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

fn padded(lo: f64, hi: f64) -> (f64, f64) {
    if hi > lo {
        let pad = (hi - lo) * 0.05;
        (lo - pad, hi + pad)
    } else {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (lo - pad, hi + pad)
    }
}

impl LineChart {
    /// The series that are drawn (and listed in the legend), with their palette index.
    pub fn drawn(&self) -> Vec<(usize, &Series)> {
        self.series
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_drawn())
            .map(|(i, s)| (s.color.unwrap_or(i), s))
            .collect()
    }

    fn tx(&self, x: f64) -> f64 {
        match self.x_scale {
            XScale::Linear => x,
            XScale::Log2 if x > 0.0 => x.log2(),
            XScale::Log2 => f64::NAN,
        }
    }

    /// Renders the chart as HTML: the `<svg>` plot followed by its legend (an HTML list
    /// with one swatch per drawn series showing its colour, line style and marker, so it
    /// never covers the data), and the note.
    pub fn to_html(&self) -> String {
        let mut out = self.to_svg();
        out.push_str("<ul class=\"legend\">");
        for (c, s) in self.drawn() {
            let RGBColor(r, g, b) = color(c);
            let col = format!("rgb({r},{g},{b})");
            let mark = match s.marker {
                Marker::None => String::new(),
                Marker::Circle => format!("<circle cx=\"14\" cy=\"6\" r=\"3.5\" fill=\"#fff\" stroke=\"{col}\" stroke-width=\"1.5\"/>"),
                Marker::Square => format!("<rect x=\"10.5\" y=\"2.5\" width=\"7\" height=\"7\" fill=\"#fff\" stroke=\"{col}\" stroke-width=\"1.5\"/>"),
                Marker::Triangle => format!("<polygon points=\"14,2 18,10 10,10\" fill=\"#fff\" stroke=\"{col}\" stroke-width=\"1.5\"/>"),
                Marker::Cross => format!("<path d=\"M10 2L18 10M18 2L10 10\" stroke=\"{col}\" stroke-width=\"1.5\"/>"),
            };
            out.push_str(&format!(
                "<li><svg class=\"swatch\" width=\"28\" height=\"12\"><line x1=\"0\" y1=\"6\" x2=\"28\" y2=\"6\" stroke=\"{col}\" stroke-width=\"2\" stroke-dasharray=\"{}\"/>{mark}</svg>{}</li>",
                s.dash.dasharray(),
                crate::html::escape(&s.name)
            ));
        }
        if !self.markers.is_empty() && !self.marker_label.is_empty() {
            out.push_str(&format!(
                "<li><svg class=\"swatch\" width=\"28\" height=\"12\"><line x1=\"14\" y1=\"0\" x2=\"14\" y2=\"12\" stroke=\"#787878\" stroke-width=\"1.5\" stroke-dasharray=\"3 2\"/></svg>{}</li>",
                crate::html::escape(&self.marker_label)
            ));
        }
        for (range, RGBColor(r, g, b)) in [(&self.shade, SHADE), (&self.outage, OUTAGE)] {
            if let Some((_, _, label)) = range {
                out.push_str(&format!(
                    "<li><svg class=\"swatch\" width=\"28\" height=\"12\"><rect width=\"28\" height=\"12\" fill=\"rgb({r},{g},{b})\"/></svg>{}</li>",
                    crate::html::escape(label)
                ));
            }
        }
        out.push_str("</ul>");
        if !self.note.is_empty() {
            out.push_str(&format!(
                "<p class=\"note\">{}</p>",
                crate::html::escape(&self.note)
            ));
        }
        out
    }

    /// Renders the chart as a standalone `<svg>` element.
    pub fn to_svg(&self) -> String {
        let mut svg = String::new();
        // Drawing into a String cannot fail for I/O reasons; a plotters error here
        // would be a range bug, which we surface as a visible note instead of a panic.
        if let Err(e) = self.draw(&mut svg) {
            return format!(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"60\"><text x=\"10\" y=\"30\">chart error: {}</text></svg>",
                crate::html::escape(&e)
            );
        }
        compact_svg(&svg)
    }

    /// Draws the plot into `out`: the axes over the data's ranges, then each drawn
    /// series (band, lines, markers), then the vertical event markers.
    fn draw(&self, out: &mut String) -> Result<(), String> {
        let drawn = self.drawn();
        let (x_range, y_range, empty) = self.ranges(&drawn);
        let root = SVGBackend::with_string(out, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = self.axes(&root, &drawn, x_range, y_range, empty)?;
        if let Some((from, to, _)) = &self.shade {
            self.draw_range(&mut chart, (*from, *to), 0.0, SHADE, (x_range, y_range))?;
        }
        if let Some((from, to, _)) = &self.outage {
            let min_width = (x_range.1 - x_range.0) * OUTAGE_MIN_PX / f64::from(WIDTH);
            self.draw_range(
                &mut chart,
                (*from, *to),
                min_width,
                OUTAGE,
                (x_range, y_range),
            )?;
        }
        for (ci, s) in &drawn {
            let c = color(*ci);
            self.draw_band(&mut chart, s, c)?;
            let segments = self.draw_lines(&mut chart, s, c)?;
            draw_point_markers(&mut chart, s.marker, segments, c)?;
        }
        self.draw_event_markers(&mut chart, y_range)?;
        root.present().map_err(|e| e.to_string())?;
        Ok(())
    }

    /// An x range filled with `fill` over the plot's height, at least `min_width` wide
    /// (widened about its middle), clipped to the plot.
    fn draw_range(
        &self,
        chart: &mut Chart<'_, '_>,
        (from, to): (f64, f64),
        min_width: f64,
        fill: RGBColor,
        (x_range, y_range): ((f64, f64), (f64, f64)),
    ) -> Result<(), String> {
        let (mut x0, mut x1) = (self.tx(from), self.tx(to));
        if x1 - x0 < min_width {
            let mid = (x0 + x1) / 2.0;
            (x0, x1) = (mid - min_width / 2.0, mid + min_width / 2.0);
        }
        let (x0, x1) = (x0.max(x_range.0), x1.min(x_range.1));
        if x0.is_finite() && x1.is_finite() && x1 > x0 {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, y_range.0), (x1, y_range.1)],
                    fill.filled(),
                )))
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The x and y ranges of the plot (over the drawn points and bands, the event
    /// markers and the fixed x bounds), and whether there is no data (then unit ranges).
    fn ranges(&self, drawn: &[(usize, &Series)]) -> ((f64, f64), (f64, f64), bool) {
        let finite = |x: f64, y: f64| x.is_finite() && y.is_finite();
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for (_, s) in drawn {
            for &(x, y) in &s.points {
                let x = self.tx(x);
                if finite(x, y) {
                    xs.push(x);
                    ys.push(y);
                }
            }
            for &(x, lo, hi) in &s.band {
                let x = self.tx(x);
                if finite(x, lo) && hi.is_finite() {
                    xs.push(x);
                    ys.extend([lo, hi]);
                }
            }
        }
        let empty_data = xs.is_empty();
        xs.extend(self.markers.iter().map(|m| self.tx(*m)));
        for (from, to, _) in self.shade.iter().chain(&self.outage) {
            xs.extend([self.tx(*from), self.tx(*to)]);
        }
        if let Some((lo, hi)) = self.x_bounds {
            xs.extend([self.tx(lo), self.tx(hi)]);
        }
        match (bounds(xs.into_iter()), bounds(ys.into_iter())) {
            (Some(x), Some(y)) if !empty_data => {
                let (x0, x1) = match self.x_scale {
                    XScale::Log2 => (x.0 - 0.25, x.1 + 0.25),
                    XScale::Linear if x.1 > x.0 => x,
                    XScale::Linear => padded(x.0, x.1),
                };
                let (mut y0, y1) = padded(y.0, y.1);
                if self.y_from_zero && y.0 >= 0.0 {
                    y0 = 0.0;
                }
                ((x0, x1), (y0, y1), false)
            }
            _ => ((0.0, 1.0), (0.0, 1.0), true),
        }
    }

    /// The caption, the axes with their labels and ticks, and the grid.
    fn axes<'a, 'b>(
        &self,
        root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
        drawn: &[(usize, &Series)],
        x_range: (f64, f64),
        y_range: (f64, f64),
        empty: bool,
    ) -> Result<Chart<'a, 'b>, String> {
        let caption = if empty {
            format!("{} (no data)", self.title)
        } else {
            self.title.clone()
        };
        // Integer x values (clients, scale) and log2 axes: ticks at whole numbers only.
        let log2 = self.x_scale == XScale::Log2;
        let integral_x = !empty
            && (log2
                || drawn
                    .iter()
                    .flat_map(|(_, s)| s.points.iter())
                    .all(|p| !p.0.is_finite() || p.0.fract() == 0.0));
        let ticks = x_ticks(x_range, integral_x);
        let mut chart = ChartBuilder::on(root)
            .caption(caption, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(64)
            .build_cartesian_2d(x_range.0..x_range.1, y_range.0..y_range.1)
            .map_err(|e| e.to_string())?;
        // plotters picks 1-2-5 steps with at most this many labels: for whole-number
        // axes, one per integer fits, so the ticks land on integers.
        let x_labels = if integral_x { ticks.len().max(2) } else { 10 };
        let x_fmt = move |v: &f64| {
            if !integral_x {
                short(*v)
            } else if (v - v.round()).abs() < 1e-9 {
                if log2 {
                    format!("{}", 2f64.powi(v.round() as i32))
                } else {
                    format!("{}", v.round() as i64)
                }
            } else {
                String::new()
            }
        };
        let y_fmt = |v: &f64| short(*v);
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .x_labels(x_labels)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            // One grid line per label, no minor lines between them: minor lines made
            // most of a page's bytes and little of what it shows.
            .bold_line_style(GRID)
            .max_light_lines(0)
            .draw()
            .map_err(|e| e.to_string())?;
        Ok(chart)
    }

    /// The series' shaded band (its finite corners), if it has one.
    fn draw_band(&self, chart: &mut Chart<'_, '_>, s: &Series, c: RGBColor) -> Result<(), String> {
        let band: Vec<(f64, f64, f64)> = s
            .band
            .iter()
            .map(|b| (self.tx(b.0), b.1, b.2))
            .filter(|b| b.0.is_finite() && b.1.is_finite() && b.2.is_finite())
            .collect();
        if !band.is_empty() {
            let polygon: Vec<(f64, f64)> = band
                .iter()
                .map(|b| (b.0, b.2))
                .chain(band.iter().rev().map(|b| (b.0, b.1)))
                .collect();
            chart
                .draw_series(std::iter::once(Polygon::new(polygon, c.mix(0.15).filled())))
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The series' lines, one per run of finite points, in its dash style; returns
    /// those runs (on the plot's x scale).
    fn draw_lines(
        &self,
        chart: &mut Chart<'_, '_>,
        s: &Series,
        c: RGBColor,
    ) -> Result<Vec<Vec<(f64, f64)>>, String> {
        let segments: Vec<Vec<(f64, f64)>> = s
            .segments()
            .into_iter()
            .map(|seg| {
                seg.into_iter()
                    .map(|(x, y)| (self.tx(x), y))
                    .filter(|p| p.0.is_finite())
                    .collect::<Vec<_>>()
            })
            .filter(|seg| !seg.is_empty())
            .collect();
        let style = c.stroke_width(2);
        for seg in &segments {
            if seg.len() == 1 && s.marker == Marker::None {
                // A lone sample between gaps: a dot, or it would not be seen.
                chart
                    .draw_series(std::iter::once(Circle::new(seg[0], 3, c.filled())))
                    .map_err(|e| e.to_string())?;
                continue;
            }
            // One polyline per segment whatever its dash: a dashed line gets a stroke
            // width no other element has, which `compact_svg` turns into the SVG dash
            // pattern (plotters would draw every dash as an element of its own).
            let style = match s.dash {
                Dash::Solid => style,
                dash => c.stroke_width(dash_marker_width(dash)),
            };
            chart
                .draw_series(LineSeries::new(seg.clone(), style))
                .map_err(|e| e.to_string())?;
        }
        Ok(segments)
    }

    /// The vertical dashed lines at the event markers (e.g. checkpoints).
    fn draw_event_markers(
        &self,
        chart: &mut Chart<'_, '_>,
        y_range: (f64, f64),
    ) -> Result<(), String> {
        let grey = RGBColor(120, 120, 120);
        for &m in &self.markers {
            let line = DashedLineSeries::new(
                vec![(self.tx(m), y_range.0), (self.tx(m), y_range.1)],
                5,
                4,
                grey.stroke_width(1),
            );
            chart.draw_series(line).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// The plotting area of a chart: numeric x and y.
type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A hollow marker of shape `marker` on each point of `segments`.
fn draw_point_markers(
    chart: &mut Chart<'_, '_>,
    marker: Marker,
    segments: Vec<Vec<(f64, f64)>>,
    c: RGBColor,
) -> Result<(), String> {
    let pts: Vec<(f64, f64)> = segments.into_iter().flatten().collect();
    let hollow = c.stroke_width(2);
    let res = match marker {
        Marker::None => Ok(()),
        Marker::Circle => chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 4, hollow)))
            .map(|_| ()),
        Marker::Square => chart
            .draw_series(
                pts.iter()
                    .map(|p| EmptyElement::at(*p) + Rectangle::new([(-4, -4), (4, 4)], hollow)),
            )
            .map(|_| ()),
        Marker::Triangle => chart
            .draw_series(pts.iter().map(|p| TriangleMarker::new(*p, 5, hollow)))
            .map(|_| ()),
        Marker::Cross => chart
            .draw_series(pts.iter().map(|p| Cross::new(*p, 4, hollow)))
            .map(|_| ()),
    };
    res.map_err(|e| e.to_string())
}

/// Builds a chart on a test page's time axis: (title, y label, series, note).
pub(crate) type ChartMaker<'a> = &'a dyn Fn(&str, &str, Vec<Series>, String) -> LineChart;

/// A chart in its page's `<div class="chart">`, counted in `count`.
pub(crate) fn chart_div(c: &LineChart, count: &mut usize) -> String {
    *count += 1;
    format!("<div class=\"chart\">{}</div>", c.to_html())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn chart(series: Vec<Series>) -> LineChart {
        LineChart {
            title: "TPS".into(),
            x_label: "clients".into(),
            y_label: "tps".into(),
            series,
            ..Default::default()
        }
    }

    /// The point counts of the `<polyline>` elements drawn in the first palette colour
    /// (the data; axes and grid lines are grey or black).
    pub(crate) fn polylines(svg: &str) -> Vec<usize> {
        svg.split("<polyline")
            .skip(1)
            .filter(|p| p[..p.find("/>").unwrap_or(p.len())].contains("#1F77B4"))
            .map(|p| {
                let start = p.find("points=\"").unwrap() + 8;
                let end = start + p[start..].find('"').unwrap();
                p[start..end].split_whitespace().count()
            })
            .collect()
    }

    #[test]
    fn a_shaded_range_is_drawn_behind_the_data_and_named_in_the_legend() {
        let series = vec![Series::line(
            "tps",
            (0..30).map(|i| (f64::from(i), 100.0)).collect(),
        )];
        let plain = chart(series.clone()).to_svg();
        assert!(!plain.contains("#ECECEC"), "{plain}");
        let mut c = chart(series);
        c.shade = Some((0.0, 8.0, "warm-up".into()));
        let svg = c.to_svg();
        let rect = svg.find("#ECECEC").expect("the shade");
        let line = svg.find("#1F77B4").expect("the data");
        assert!(rect < line, "the shade is drawn first: {svg}");
        let html = c.to_html();
        assert!(
            html.contains("fill=\"rgb(236,236,236)\"/></svg>warm-up</li>"),
            "{html}"
        );
    }

    /// The x and width of the first `<rect>` filled with `fill`.
    fn rect_x(svg: &str, fill: &str) -> (f64, f64) {
        let rect = svg
            .split("<rect")
            .skip(1)
            .find(|r| r[..r.find("/>").unwrap()].contains(fill))
            .expect("the rectangle");
        let attr = |name: &str| -> f64 {
            let at = rect.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            rect[at..at + rect[at..].find('"').unwrap()]
                .parse()
                .unwrap()
        };
        (attr("x"), attr("width"))
    }

    #[test]
    fn an_outage_is_marked_where_it_was_and_stays_visible_however_short() {
        let flat = |n: i32| -> Vec<(f64, f64)> { (0..=n).map(|i| (f64::from(i), 100.0)).collect() };
        let mut c = chart(vec![Series::line("tps", flat(30))]);
        c.x_bounds = Some((0.0, 30.0));
        c.shade = Some((0.0, 6.0, "warm-up".into()));
        c.outage = Some((10.0, 20.0, "outage 10 s".into()));
        let svg = c.to_svg();
        let (shade_x, shade_w) = rect_x(&svg, "#ECECEC");
        let (x, w) = rect_x(&svg, "#FAC8C8");
        // The same axis: 6 s of warm-up from 0, 10 s of outage from 10 s.
        let px_per_s = shade_w / 6.0;
        assert!((w / px_per_s - 10.0).abs() < 0.5, "{svg}");
        assert!(((x - shade_x) / px_per_s - 10.0).abs() < 0.5, "{svg}");
        assert!(svg.find("#FAC8C8").unwrap() < svg.find("#1F77B4").unwrap());
        let html = c.to_html();
        assert!(
            html.contains("fill=\"rgb(250,200,200)\"/></svg>outage 10 s</li>"),
            "{html}"
        );
        // 10 ms of a 30 s axis is still drawn.
        c.outage = Some((15.0, 15.01, "outage 0.01 s".into()));
        let (x, w) = rect_x(&c.to_svg(), "#FAC8C8");
        assert!(w >= 3.0, "{w}");
        assert!(((x + w / 2.0 - shade_x) / px_per_s - 15.0).abs() < 0.5);
    }

    #[test]
    fn a_dashed_series_is_one_polyline_with_a_dash_pattern() {
        let c = chart(vec![Series {
            name: "p90".into(),
            points: (0..50).map(|i| (f64::from(i), f64::from(i % 7))).collect(),
            dash: Dash::Dotted,
            ..Default::default()
        }]);
        let svg = c.to_svg();
        assert_eq!(polylines(&svg), vec![50], "{svg}");
        assert!(
            svg.contains("stroke=\"#1F77B4\" stroke-width=\"2\" stroke-dasharray=\"2 3\""),
            "{svg}"
        );
        assert!(!svg.contains("stroke-width=\"18\""), "{svg}");
    }

    #[test]
    fn compact_svg_drops_defaults_and_rounds_font_sizes() {
        let svg = "<text x=\"1\" font-family=\"sans-serif\" font-size=\"13.709677419354838\" \
                   opacity=\"1\" fill=\"#000000\">t</text><line opacity=\"0.5\"/>";
        assert_eq!(
            compact_svg(svg),
            "<text x=\"1\" font-size=\"13.7\">t</text><line opacity=\"0.5\"/>"
        );
        assert_eq!(
            compact_svg(
                "<polyline fill=\"none\" stroke=\"#000000\" stroke-width=\"1\" points=\"1,2 3,4\"/>\
                 <line stroke=\"#E4E4E4\" stroke-width=\"1\" x1=\"0\"/>"
            ),
            "<polyline class=\"k\" points=\"1,2 3,4\"/><line class=\"g\" x1=\"0\"/>"
        );
        assert_eq!(
            compact_svg("<text font-size=\"big\">"),
            "<text font-size=\"big\">"
        );
        assert_eq!(compact_svg("<text font-size=\"9"), "<text font-size=\"9");
    }

    #[test]
    fn renders_lines_bands_and_a_legend_of_drawn_series_only() {
        let mut c = chart(vec![
            Series {
                name: "A <15>".into(),
                points: vec![(1.0, 100.0), (2.0, 190.0), (4.0, 350.0)],
                band: vec![(1.0, 95.0, 105.0), (2.0, 180.0, 200.0), (4.0, 330.0, 360.0)],
                marker: Marker::Circle,
                ..Default::default()
            },
            Series {
                name: "B".into(),
                points: vec![(1.0, 110.0), (2.0, 200.0)],
                marker: Marker::Square,
                dash: Dash::Dashed,
                ..Default::default()
            },
            Series::line("max", vec![(1.0, f64::NAN), (2.0, f64::NAN)]),
        ]);
        c.markers = vec![2.5];
        c.marker_label = "checkpoint".into();
        let html = c.to_html();
        assert!(html.starts_with("<svg"));
        assert!(html.contains("<polyline"), "no line drawn");
        assert!(html.contains("<polygon"), "no band drawn");
        assert!(
            html.contains("A &lt;15&gt;"),
            "legend text missing or unescaped"
        );
        assert!(html.contains("checkpoint</li>"));
        // The series without a sample is neither drawn nor in the legend.
        assert_eq!(html.matches("<li>").count(), 3, "{html}");
        assert!(!html.contains(">max</li>"));
        // The dashed series is told apart without colour, in the plot and the legend.
        assert!(html.contains("stroke-dasharray=\"6 3\""));
        assert!(html.contains("<rect"), "square markers of B");
        // Hollow markers: overlapping points stay visible.
        assert!(html.contains("<circle") && html.contains("fill=\"none\""));
    }

    #[test]
    fn what_is_drawn_equals_the_series_and_gaps_break_lines() {
        // A missing sample (NaN) splits the line in two: 3 points, a gap, 2 points; a
        // zero is a point like any other.
        let c = chart(vec![Series::line(
            "tps",
            vec![
                (0.5, 10.0),
                (1.5, 0.0),
                (2.5, 12.0),
                (3.5, f64::NAN),
                (4.5, 11.0),
                (5.5, 13.0),
            ],
        )]);
        assert_eq!(c.series[0].segments().len(), 2);
        assert_eq!(polylines(&c.to_svg()), [3, 2]);
        // Without the gap: one line through all points.
        let c = chart(vec![Series::line(
            "tps",
            (0..6).map(|i| (i as f64, i as f64)).collect(),
        )]);
        assert_eq!(polylines(&c.to_svg()), [6]);
    }

    #[test]
    fn log2_axis_is_labelled_with_the_measured_powers_of_two() {
        let mut c = chart(vec![Series::line(
            "tps",
            vec![(1.0, 10.0), (2.0, 20.0), (4.0, 35.0), (8.0, 50.0)],
        )]);
        c.x_scale = XScale::Log2;
        let svg = c.to_svg();
        let texts: Vec<String> = svg
            .split("<text")
            .skip(1)
            .map(|t| {
                t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()]
                    .trim()
                    .to_string()
            })
            .collect();
        for label in ["1", "2", "4", "8"] {
            assert!(
                texts.iter().any(|t| t == label),
                "tick {label} missing: {texts:?}"
            );
        }
        for label in ["0", "3", "6"] {
            assert!(
                !texts.iter().any(|t| t == label),
                "linear tick {label} on a log2 axis"
            );
        }
    }

    #[test]
    fn empty_and_degenerate_data_do_not_panic() {
        assert!(chart(vec![]).to_svg().contains("no data"));
        let single = chart(vec![Series::line("x", vec![(3.0, 5.0)])]);
        assert!(single.to_svg().contains("<circle"));
        let nan = chart(vec![Series::line(
            "x",
            vec![(f64::NAN, 1.0), (1.0, f64::INFINITY)],
        )]);
        assert!(nan.to_svg().contains("no data"));
    }
}
