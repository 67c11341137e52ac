//! Free-format MPS export, so that any MIP solver can re-solve a round and check coda's answer.

use std::io::Write;

use good_lp::{Expression, IntoAffineExpression};

use super::Model;

fn num(x: f64) -> String {
    if x == x.trunc() && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.17e}")
    }
}

/// Writes the model. Rows are `c<k>` in constraint order, the objective row is `obj`; the
/// objective constant is written as the objective row's RHS with the usual sign convention
/// (RHS = −constant), and repeated in a comment.
pub(super) fn write(
    out: &mut dyn Write,
    model: &Model,
    objective: &Expression,
    constant: f64,
) -> std::io::Result<()> {
    let (info, constraints, index_of) = (&model.info, &model.constraints, &model.index_of);
    let mut columns: Vec<Vec<(String, f64)>> = vec![Vec::new(); info.len()];
    for (v, c) in objective.linear_coefficients() {
        if c != 0.0 {
            columns[index_of[&v]].push(("obj".into(), c));
        }
    }
    let mut rows = Vec::with_capacity(constraints.len());
    let mut rhs = Vec::new();
    for (k, con) in constraints.iter().enumerate() {
        let e = con.expression();
        let name = format!("c{k}");
        for (v, c) in e.linear_coefficients() {
            if c != 0.0 {
                columns[index_of[&v]].push((name.clone(), c));
            }
        }
        rows.push((if con.is_equality() { 'E' } else { 'L' }, name.clone()));
        let b = -e.constant();
        if b != 0.0 {
            rhs.push((name, b));
        }
    }
    writeln!(
        out,
        "* coda round model; objective = solver objective + ({constant})"
    )?;
    writeln!(out, "NAME coda")?;
    writeln!(out, "OBJSENSE")?;
    writeln!(out, "    MAX")?;
    writeln!(out, "ROWS")?;
    writeln!(out, " N  obj")?;
    for (t, n) in &rows {
        writeln!(out, " {t}  {n}")?;
    }
    writeln!(out, "COLUMNS")?;
    let mut in_int = false;
    for (i, v) in info.iter().enumerate() {
        if v.integer != in_int {
            let tag = if v.integer { "'INTORG'" } else { "'INTEND'" };
            writeln!(out, "    MARKER  'MARKER'  {tag}")?;
            in_int = v.integer;
        }
        if columns[i].is_empty() {
            // A column in no row still has to be declared.
            writeln!(out, "    {}  obj  0", v.name)?;
        }
        for (r, c) in &columns[i] {
            writeln!(out, "    {}  {r}  {}", v.name, num(*c))?;
        }
    }
    if in_int {
        writeln!(out, "    MARKER  'MARKER'  'INTEND'")?;
    }
    writeln!(out, "RHS")?;
    if constant != 0.0 {
        writeln!(out, "    RHS  obj  {}", num(-constant))?;
    }
    for (n, b) in &rhs {
        writeln!(out, "    RHS  {n}  {}", num(*b))?;
    }
    writeln!(out, "BOUNDS")?;
    for v in info {
        if v.lb == f64::NEG_INFINITY {
            writeln!(out, " MI BND  {}", v.name)?;
        } else {
            writeln!(out, " LO BND  {}  {}", v.name, num(v.lb))?;
        }
        if v.ub == f64::INFINITY {
            writeln!(out, " PL BND  {}", v.name)?;
        } else {
            writeln!(out, " UP BND  {}  {}", v.name, num(v.ub))?;
        }
    }
    writeln!(out, "ENDATA")
}
