//! A report table as a value: a title, named columns, rows of cells and
//! notes under it. A report builds tables; each format renders them the
//! same way (text, Markdown, CSV), so a new table is one function and
//! every format gets it.

use std::fmt::Write as _;

/// How a column's cells line up in text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Names and labels.
    Left,
    /// Figures.
    Right,
}

/// One column: its heading and alignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The heading.
    pub name: String,
    /// How its cells line up.
    pub align: Align,
}

/// A table of cells already formatted (a figure not measured is `-`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// The line above it: what its cells are and in which unit.
    pub title: String,
    /// Its columns, left to right.
    pub columns: Vec<Column>,
    /// Its rows; each has one cell per column.
    pub rows: Vec<Vec<String>>,
    /// Lines under it (what a marker means, what was left out).
    pub notes: Vec<String>,
}

impl Table {
    /// An empty table with `title` and the first column `first` (left
    /// aligned: the row's label).
    pub fn new(title: impl Into<String>, first: &str) -> Self {
        Table {
            title: title.into(),
            columns: vec![Column {
                name: first.into(),
                align: Align::Left,
            }],
            ..Table::default()
        }
    }

    /// Makes the first column a figure (right aligned), for tables whose
    /// labels come last.
    pub fn right_first(mut self) -> Self {
        self.columns[0].align = Align::Right;
        self
    }

    /// Adds a column of figures (right aligned).
    pub fn figure(mut self, name: impl Into<String>) -> Self {
        self.columns.push(Column {
            name: name.into(),
            align: Align::Right,
        });
        self
    }

    /// Adds a column of labels (left aligned).
    pub fn label(mut self, name: impl Into<String>) -> Self {
        self.columns.push(Column {
            name: name.into(),
            align: Align::Left,
        });
        self
    }

    /// Adds a row; missing cells are `-`, extra ones dropped.
    pub fn row(&mut self, mut cells: Vec<String>) {
        cells.resize(self.columns.len(), "-".into());
        self.rows.push(cells);
    }

    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text: a blank line, the title, the headings, the
    /// rows (columns two spaces apart, each as wide as its widest cell)
    /// and the notes. A table without rows is its title and notes, or
    /// nothing without notes.
    pub fn text(&self) -> String {
        let mut o = String::new();
        if self.is_empty() {
            if !self.notes.is_empty() {
                let _ = writeln!(o, "\n{}", self.title);
                for n in &self.notes {
                    let _ = writeln!(o, "{n}");
                }
            }
            return o;
        }
        // Figures with their digits grouped (`8,977,548`): text only, the
        // data formats keep plain numbers.
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                r.iter()
                    .zip(&self.columns)
                    .map(|(c, col)| match col.align {
                        Align::Right => grouped(c),
                        Align::Left => c.clone(),
                    })
                    .collect()
            })
            .collect();
        let width = |i: usize| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([self.columns[i].name.chars().count()])
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.columns.len()).map(width).collect();
        let line = |o: &mut String, cells: &mut dyn Iterator<Item = &str>| {
            let mut l = String::new();
            for (i, c) in cells.enumerate() {
                let w = widths[i];
                if i > 0 {
                    l.push_str("  ");
                }
                match self.columns[i].align {
                    Align::Left => {
                        let _ = write!(l, "{c:<w$}");
                    }
                    Align::Right => {
                        let _ = write!(l, "{c:>w$}");
                    }
                }
            }
            let _ = writeln!(o, "{}", l.trim_end());
        };
        let _ = writeln!(o, "\n{}", self.title);
        line(&mut o, &mut self.columns.iter().map(|c| c.name.as_str()));
        for r in &rows {
            line(&mut o, &mut r.iter().map(String::as_str));
        }
        for n in &self.notes {
            let _ = writeln!(o, "{n}");
        }
        o
    }

    /// The table in Markdown: the title in bold, then the table (`|`
    /// escaped), then the notes. Nothing for a table without rows.
    pub fn markdown(&self) -> String {
        let mut o = String::new();
        if self.is_empty() {
            return o;
        }
        let md = |s: &str| s.replace('|', "\\|");
        let _ = writeln!(o, "\n**{}**\n", md(&self.title));
        let head: Vec<String> = self.columns.iter().map(|c| md(&c.name)).collect();
        let _ = writeln!(o, "| {} |", head.join(" | "));
        let rule: Vec<&str> = self
            .columns
            .iter()
            .map(|c| match c.align {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        let _ = writeln!(o, "|{}|", rule.join("|"));
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(|c| md(c)).collect();
            let _ = writeln!(o, "| {} |", cells.join(" | "));
        }
        if !self.notes.is_empty() {
            o.push('\n');
            for n in &self.notes {
                let _ = writeln!(o, "{}  ", md(n));
            }
        }
        o
    }

    /// The table as CSV: the headings, then the rows (title and notes
    /// left out: a CSV file is one table).
    pub fn csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let _ = w.write_record(self.columns.iter().map(|c| c.name.as_str()));
        for r in &self.rows {
            let _ = w.write_record(r);
        }
        // into_inner flushes into a Vec, which cannot fail.
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }
}

/// A cell that is a number of five or more integer digits (a sign, a
/// fraction and a trailing marker such as `!` allowed) with its integer
/// digits in groups of three: `14884524` is `14,884,524`; any other cell
/// as it is.
pub fn grouped(cell: &str) -> String {
    let (sign, rest) = match cell.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", cell),
    };
    let int_len = rest.chars().take_while(char::is_ascii_digit).count();
    let tail = &rest[int_len..];
    let tail_ok = match tail.strip_prefix('.') {
        Some(f) => f
            .trim_end_matches(['!', '~', '*'])
            .chars()
            .all(|c| c.is_ascii_digit()),
        None => tail.chars().all(|c| matches!(c, '!' | '~' | '*')),
    };
    if int_len < 5 || !tail_ok {
        return cell.to_string();
    }
    let digits = &rest[..int_len];
    let mut out = String::from(sign);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (int_len - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out.push_str(tail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_figures_are_grouped_in_text_only() {
        assert_eq!(grouped("8977548"), "8,977,548");
        assert_eq!(grouped("14884524!"), "14,884,524!");
        assert_eq!(grouped("123456.75"), "123,456.75");
        assert_eq!(grouped("-100000"), "-100,000");
        for same in [
            "9999",
            "0.264/0.201",
            "1.21 (0.58)",
            "-",
            "none",
            "12345abc",
            "2.30~",
        ] {
            assert_eq!(grouped(same), same);
        }
        let mut t = Table::new("ops/s", "step").figure("rocksdb");
        t.row(vec!["load".into(), "388044".into()]);
        assert!(t.text().contains("388,044"), "{}", t.text());
        assert!(t.csv().contains("388044") && t.markdown().contains("388044"));
    }

    fn two() -> Table {
        let mut t = Table::new("ops/s", "step").figure("rocksdb").figure("lmdb");
        t.row(vec!["load".into(), "204338".into(), "171986".into()]);
        t.row(vec!["ows.1".into(), "798".into()]);
        t.notes.push("a note".into());
        t
    }

    #[test]
    fn text_pads_each_column_to_its_widest_cell() {
        assert_eq!(
            two().text(),
            "\nops/s\nstep   rocksdb     lmdb\nload   204,338  171,986\nows.1      798        -\na note\n"
        );
    }

    #[test]
    fn markdown_and_csv_have_the_same_cells() {
        let t = two();
        assert!(
            t.markdown()
                .contains("| step | rocksdb | lmdb |\n|---|---:|---:|\n| load | 204338 | 171986 |")
        );
        assert_eq!(
            t.csv(),
            "step,rocksdb,lmdb\nload,204338,171986\nows.1,798,-\n"
        );
    }

    #[test]
    fn a_table_without_rows_renders_nothing() {
        let t = Table::new("x", "step").figure("a");
        assert!(t.text().is_empty() && t.markdown().is_empty());
    }
}
