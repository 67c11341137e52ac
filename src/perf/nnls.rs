//! Non-negative least squares (Lawson & Hanson, 1974), for the small dense fits of calibration.
//!
//! Every coefficient of the speed models is a time per unit of something, so it may not be
//! negative; a plain least-squares fit on noisy rows happily returns negative terms that then
//! predict negative step times outside the measured range.

use nalgebra::{DMatrix, DVector};

/// Minimises `‖A x − b‖²` subject to `x ≥ 0`. `A` is `rows × cols`, row-major in `a`.
pub(crate) fn nnls(a: &DMatrix<f64>, b: &DVector<f64>) -> DVector<f64> {
    let n = a.ncols();
    let mut x = DVector::<f64>::zeros(n);
    let mut passive = vec![false; n];
    let tol = 1e-12 * (1.0 + a.norm() * b.norm());
    for _outer in 0..(3 * n + 10) {
        let w = a.transpose() * (b - a * &x);
        let candidate = (0..n)
            .filter(|&j| !passive[j] && w[j] > tol)
            .max_by(|&i, &j| w[i].total_cmp(&w[j]));
        let Some(j) = candidate else { break };
        passive[j] = true;
        for _inner in 0..(3 * n + 10) {
            let z = solve_passive(a, b, &passive);
            let infeasible: Vec<usize> = (0..n).filter(|&i| passive[i] && z[i] <= 0.0).collect();
            if infeasible.is_empty() {
                x = z;
                break;
            }
            // Step from x towards z until the first passive coefficient hits zero.
            let alpha = infeasible
                .iter()
                .map(|&i| x[i] / (x[i] - z[i]))
                .fold(f64::INFINITY, f64::min);
            x = &x + (z - &x) * alpha;
            for i in 0..n {
                if passive[i] && x[i] <= 1e-15 {
                    passive[i] = false;
                    x[i] = 0.0;
                }
            }
        }
    }
    x
}

/// Unconstrained least squares on the passive columns; zeros elsewhere.
fn solve_passive(a: &DMatrix<f64>, b: &DVector<f64>, passive: &[bool]) -> DVector<f64> {
    let cols: Vec<usize> = (0..a.ncols()).filter(|&j| passive[j]).collect();
    let sub = a.select_columns(&cols);
    let sol = sub
        .clone()
        .svd(true, true)
        .solve(b, 1e-12)
        .unwrap_or_else(|_| DVector::zeros(cols.len()));
    let mut z = DVector::zeros(a.ncols());
    for (k, &j) in cols.iter().enumerate() {
        z[j] = sol[k];
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_nonnegative_solution_and_clamps_negative_one() {
        // y = 2 x0 + 0 x1 exactly; unconstrained LS would give the same, NNLS must too.
        let a = DMatrix::from_row_slice(4, 2, &[1.0, 0.0, 2.0, 1.0, 3.0, 0.0, 4.0, 1.0]);
        let b = DVector::from_vec(vec![2.0, 4.0, 6.0, 8.0]);
        let x = nnls(&a, &b);
        assert!((x[0] - 2.0).abs() < 1e-9 && x[1].abs() < 1e-9, "{x}");
        // y = x0 - x1 would need a negative coefficient: NNLS sets it to 0.
        let b2 = DVector::from_vec(vec![1.0, 1.0, 3.0, 3.0]);
        let x2 = nnls(&a, &b2);
        assert!(x2.iter().all(|&v| v >= 0.0), "{x2}");
    }
}
