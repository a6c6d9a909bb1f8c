//! Runge–Kutta order conditions from rooted trees (Butcher's theory), to
//! verify tableaus: a method has order `p` when for every rooted tree `t` with
//! at most `p` vertices `Σ_i b_i Φ_i(t) = 1/γ(t)`, where `Φ_i(•) = 1`,
//! `Φ_i([t₁ … t_m]) = Π_k Σ_j a_ij Φ_j(t_k)` and `γ(t) = |t|·Π_k γ(t_k)`.
//! A continuous extension `b(θ)` has order `p` when
//! `Σ_i b_i(θ) Φ_i(t) = θ^|t|/γ(t)` for those trees.

use std::collections::BTreeSet;

/// A rooted tree: the (sorted) subtrees hanging from its root.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Tree(Vec<Tree>);

impl Tree {
    fn order(&self) -> usize {
        1 + self.0.iter().map(Tree::order).sum::<usize>()
    }
    fn gamma(&self) -> f64 {
        self.order() as f64 * self.0.iter().map(Tree::gamma).product::<f64>()
    }
    /// Every tree made by adding one leaf to one vertex of `self`, canonical.
    fn grown(&self) -> Vec<Tree> {
        let mut out = Vec::new();
        let mut leaf = self.0.clone();
        leaf.push(Tree(vec![]));
        leaf.sort();
        out.push(Tree(leaf));
        for (k, child) in self.0.iter().enumerate() {
            for g in child.grown() {
                let mut kids = self.0.clone();
                kids[k] = g;
                kids.sort();
                out.push(Tree(kids));
            }
        }
        out
    }
    /// `Φ(t)` for every stage of `a` (rows padded to any length ≤ their index).
    fn phi(&self, a: &[Vec<f64>]) -> Vec<f64> {
        let s = a.len();
        let mut g = vec![1.0; s];
        for child in &self.0 {
            let pc = child.phi(a);
            for (i, gi) in g.iter_mut().enumerate() {
                *gi *= a[i].iter().zip(&pc).map(|(x, y)| x * y).sum::<f64>();
            }
        }
        g
    }
}

/// All rooted trees with `1..=max_order` vertices, by order (48 of order 7).
fn trees(max_order: usize) -> Vec<Vec<Tree>> {
    let mut by_order = vec![vec![Tree(vec![])]];
    while by_order.len() < max_order {
        let next: BTreeSet<Tree> = by_order
            .last()
            .into_iter()
            .flatten()
            .flat_map(Tree::grown)
            .collect();
        by_order.push(next.into_iter().collect());
    }
    by_order.truncate(max_order);
    by_order
}

/// Number of rooted trees of each order `1..=max_order` (1, 1, 2, 4, 9, 20, 48, …).
pub fn tree_counts(max_order: usize) -> Vec<usize> {
    trees(max_order).iter().map(Vec::len).collect()
}

/// For each order `1..=max_order`, the largest `|Σ_i w_i Φ_i(t) − θ^|t|/γ(t)|`
/// over the trees of that order, for the explicit tableau `a` (row `i` holds
/// at least `a_i0 … a_i(i−1)`; longer rows are read only up to the number of
/// stages) and weights `w` (the method's `b` with `θ = 1`, or dense-output
/// weights `b(θ)`).
pub fn order_residuals(a: &[Vec<f64>], w: &[f64], theta: f64, max_order: usize) -> Vec<f64> {
    let s = a.len();
    let a: Vec<Vec<f64>> = a
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.resize(s, 0.0);
            r
        })
        .collect();
    trees(max_order)
        .iter()
        .map(|order_trees| {
            order_trees
                .iter()
                .map(|t| {
                    let phi = t.phi(&a);
                    let lhs: f64 = w.iter().zip(&phi).map(|(x, y)| x * y).sum();
                    (lhs - theta.powi(t.order() as i32) / t.gamma()).abs()
                })
                .fold(0.0, f64::max)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_counts_match_oeis_a000081() {
        assert_eq!(tree_counts(8), vec![1, 1, 2, 4, 9, 20, 48, 115]);
    }

    #[test]
    fn rk4_has_order_four_and_not_five() {
        let a = vec![vec![], vec![0.5], vec![0.0, 0.5], vec![0.0, 0.0, 1.0]];
        let b = [1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0];
        let r = order_residuals(&a, &b, 1.0, 5);
        assert!(r[..4].iter().all(|&x| x < 1e-15), "{r:?}");
        assert!(r[4] > 1e-3, "{r:?}");
    }
}
