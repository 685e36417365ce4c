//! Charts of the HTML report, drawn as inline SVG by `plotters`.
//!
//! Owns the mapping from a small chart description (`LineChart`) to SVG text. It does
//! no layout of its own: axes, ticks, legends and geometry are plotters'. A chart with no
//! finite point still renders (an empty frame with a "no data" caption) so a page never
//! breaks on a test that produced nothing.

use plotters::prelude::*;

/// One line of a chart, optionally with a shaded band (e.g. min–max of repeats).
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in x order.
    pub points: Vec<(f64, f64)>,
    /// Optional band: (x, low, high).
    pub band: Vec<(f64, f64, f64)>,
}

/// A line chart with a numeric x axis.
#[derive(Debug, Clone, Default)]
pub struct LineChart {
    /// Caption above the plot.
    pub title: String,
    /// X axis description.
    pub x_label: String,
    /// Y axis description.
    pub y_label: String,
    /// Lines to draw; one color each, in order.
    pub series: Vec<Series>,
    /// X positions marked by a vertical dashed line (e.g. checkpoints).
    pub markers: Vec<f64>,
    /// Label of the markers in the legend.
    pub marker_label: String,
    /// Plot y from zero (throughput) rather than from the data minimum.
    pub y_from_zero: bool,
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

/// Color of series number `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Axis label text: no trailing `.0`, at most 3 significant decimals.
fn short(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
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
    /// Renders the chart as HTML: the `<svg>` plot followed by its legend (an HTML list
    /// with one colored swatch per series, so it never covers the data).
    pub fn to_html(&self) -> String {
        let mut out = self.to_svg();
        if self.series.len() > 1 || !self.markers.is_empty() {
            out.push_str("<ul class=\"legend\">");
            for (i, s) in self.series.iter().enumerate() {
                let RGBColor(r, g, b) = color(i);
                out.push_str(&format!(
                    "<li><span class=\"swatch\" style=\"background:rgb({r},{g},{b})\"></span>{}</li>",
                    crate::html::escape(&s.name)
                ));
            }
            if !self.markers.is_empty() && !self.marker_label.is_empty() {
                out.push_str(&format!(
                    "<li><span class=\"swatch marker\"></span>{}</li>",
                    crate::html::escape(&self.marker_label)
                ));
            }
            out.push_str("</ul>");
        }
        out
    }

    /// Renders the chart as a standalone `<svg>` element.
    pub fn to_svg(&self) -> String {
        let mut svg = String::new();
        // Drawing into a String cannot fail for I/O reasons; a plotters error here
        // would be a range bug, which we surface as a visible note instead of a panic.
        if let Err(e) = self.draw(&mut svg) {
            svg = format!(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"60\"><text x=\"10\" y=\"30\">chart error: {}</text></svg>",
                crate::html::escape(&e)
            );
        }
        svg
    }

    fn draw(&self, out: &mut String) -> Result<(), String> {
        let finite = |x: f64, y: f64| x.is_finite() && y.is_finite();
        let points = self.series.iter().flat_map(|s| {
            s.points.iter().copied().filter(|p| finite(p.0, p.1)).chain(
                s.band
                    .iter()
                    .filter(|b| finite(b.0, b.1) && b.2.is_finite())
                    .flat_map(|b| [(b.0, b.1), (b.0, b.2)]),
            )
        });
        let (xs, ys): (Vec<f64>, Vec<f64>) = points.unzip();
        let xs = xs.into_iter().chain(self.markers.iter().copied());
        let ys = ys.into_iter();
        let (x_range, y_range, empty) = match (bounds(xs), bounds(ys)) {
            (Some(x), Some(y)) => {
                let (x0, x1) = if x.1 > x.0 { x } else { padded(x.0, x.1) };
                let (mut y0, y1) = padded(y.0, y.1);
                if self.y_from_zero && y.0 >= 0.0 {
                    y0 = 0.0;
                }
                ((x0, x1), (y0, y1), false)
            }
            _ => ((0.0, 1.0), (0.0, 1.0), true),
        };
        let root = SVGBackend::with_string(out, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let caption = if empty {
            format!("{} (no data)", self.title)
        } else {
            self.title.clone()
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(64)
            .build_cartesian_2d(x_range.0..x_range.1, y_range.0..y_range.1)
            .map_err(|e| e.to_string())?;
        // Integer x values (clients, scale): label only whole numbers.
        let integral_x = !empty
            && self
                .series
                .iter()
                .flat_map(|s| s.points.iter())
                .all(|p| !p.0.is_finite() || p.0.fract() == 0.0);
        let span = (x_range.1 - x_range.0).max(1.0);
        let x_labels = if integral_x {
            (span as usize + 1).clamp(2, 12)
        } else {
            10
        };
        let x_fmt = move |v: &f64| {
            if !integral_x {
                short(*v)
            } else if (v - v.round()).abs() < 1e-9 {
                format!("{}", v.round() as i64)
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
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, s) in self.series.iter().enumerate() {
            let c = color(i);
            let band: Vec<_> = s
                .band
                .iter()
                .filter(|b| b.0.is_finite() && b.1.is_finite() && b.2.is_finite())
                .collect();
            if !band.is_empty() {
                let polygon: Vec<(f64, f64)> = band
                    .iter()
                    .map(|b| (b.0, b.2))
                    .chain(band.iter().rev().map(|b| (b.0, b.1)))
                    .collect();
                chart
                    .draw_series(std::iter::once(Polygon::new(polygon, c.mix(0.18).filled())))
                    .map_err(|e| e.to_string())?;
            }
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .collect();
            let few = pts.len() <= 24;
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3))
                });
            if few {
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))
                    .map_err(|e| e.to_string())?;
            }
        }
        if !self.markers.is_empty() {
            let grey = RGBColor(120, 120, 120);
            for &m in &self.markers {
                let line = DashedLineSeries::new(
                    vec![(m, y_range.0), (m, y_range.1)],
                    5,
                    4,
                    grey.stroke_width(1),
                );
                chart.draw_series(line).map_err(|e| e.to_string())?;
            }
        }
        root.present().map_err(|e| e.to_string())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn renders_lines_bands_and_legend() {
        let mut c = chart(vec![
            Series {
                name: "A <15>".into(),
                points: vec![(1.0, 100.0), (2.0, 190.0), (4.0, 350.0)],
                band: vec![(1.0, 95.0, 105.0), (2.0, 180.0, 200.0), (4.0, 330.0, 360.0)],
            },
            Series {
                name: "B".into(),
                points: vec![(1.0, 110.0), (2.0, 200.0)],
                band: vec![],
            },
        ]);
        c.markers = vec![2.5];
        c.marker_label = "checkpoint".into();
        let svg = c.to_html();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("<polyline"), "no line drawn");
        assert!(svg.contains("<polygon"), "no band drawn");
        assert!(
            svg.contains("A &lt;15&gt;"),
            "legend text missing or unescaped"
        );
        assert!(svg.contains("checkpoint"));
    }

    #[test]
    fn empty_and_degenerate_data_do_not_panic() {
        assert!(chart(vec![]).to_svg().contains("no data"));
        let single = chart(vec![Series {
            name: "x".into(),
            points: vec![(3.0, 5.0)],
            band: vec![],
        }]);
        assert!(single.to_svg().contains("<circle"));
        let nan = chart(vec![Series {
            name: "x".into(),
            points: vec![(f64::NAN, 1.0), (1.0, f64::INFINITY)],
            band: vec![],
        }]);
        assert!(nan.to_svg().contains("no data"));
    }
}
