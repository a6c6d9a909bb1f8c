//! Butcher tableaus: [`Tableau`] and the named [`Method`]s.
//!
//! An explicit Runge–Kutta method with `s` stages is
//! `k_i = F(t + c_i·dt, y + dt·Σ_{j<i} a_ij·k_j)`, `y ← y + dt·Σ_i b_i·k_i`.
//! The tableau may carry a second weight row `b̂` (an embedded lower-order
//! solution) so that adaptive methods (Dormand–Prince, Tsit5) fit the same type.

use crate::error::FieldError;
use std::fmt;
use std::str::FromStr;

/// The coefficients of an explicit Runge–Kutta method.
#[derive(Debug, Clone, PartialEq)]
pub struct Tableau {
    name: String,
    order: u32,
    /// Row `i` holds `a_i0 … a_i(i-1)` (strictly lower triangular).
    a: Vec<Vec<f64>>,
    b: Vec<f64>,
    c: Vec<f64>,
    embedded: Option<(Vec<f64>, u32)>,
}

impl Tableau {
    /// An explicit tableau from its rows. `a[i]` must have exactly `i` entries
    /// (the strictly lower triangle), `b` and `c` one per stage, `c[0] = 0`,
    /// `c_i = Σ_j a_ij` and `Σ b_i = 1` (within 1e-12), all finite.
    ///
    /// # Errors
    /// [`FieldError::BadTableau`] naming the first violated condition.
    pub fn new(
        name: &str,
        order: u32,
        a: Vec<Vec<f64>>,
        b: Vec<f64>,
        c: Vec<f64>,
    ) -> Result<Self, FieldError> {
        let bad = |why: String| FieldError::BadTableau {
            name: name.to_string(),
            why,
        };
        let s = b.len();
        if s == 0 {
            return Err(bad("no stages".into()));
        }
        if a.len() != s || c.len() != s {
            return Err(bad(format!(
                "{s} weights but {} rows of a and {} nodes",
                a.len(),
                c.len()
            )));
        }
        for (i, row) in a.iter().enumerate() {
            if row.len() != i {
                return Err(bad(format!(
                    "row {i} of a has {} entries; an explicit method needs {i}",
                    row.len()
                )));
            }
            if row.iter().chain([&b[i], &c[i]]).any(|v| !v.is_finite()) {
                return Err(bad(format!("stage {i} has a non-finite coefficient")));
            }
            let sum: f64 = row.iter().sum();
            if (sum - c[i]).abs() > 1e-12 {
                return Err(bad(format!(
                    "c[{i}] = {} but row {i} of a sums to {sum}",
                    c[i]
                )));
            }
        }
        let bsum: f64 = b.iter().sum();
        if (bsum - 1.0).abs() > 1e-12 {
            return Err(bad(format!("weights sum to {bsum}, not 1")));
        }
        Ok(Tableau {
            name: name.to_string(),
            order,
            a,
            b,
            c,
            embedded: None,
        })
    }

    /// Adds an embedded weight row `b̂` of order `order` (for error estimation).
    ///
    /// # Errors
    /// [`FieldError::BadTableau`] if `b_hat` has the wrong length or does not sum to 1.
    pub fn with_embedded(mut self, b_hat: Vec<f64>, order: u32) -> Result<Self, FieldError> {
        let bad = |why: String| FieldError::BadTableau {
            name: self.name.clone(),
            why,
        };
        if b_hat.len() != self.b.len() {
            return Err(bad(format!(
                "embedded weights have {} entries for {} stages",
                b_hat.len(),
                self.b.len()
            )));
        }
        let sum: f64 = b_hat.iter().sum();
        if (sum - 1.0).abs() > 1e-12 {
            return Err(bad(format!("embedded weights sum to {sum}, not 1")));
        }
        self.embedded = Some((b_hat, order));
        Ok(self)
    }

    /// Explicit Euler: one stage, `y ← y + dt·F(t, y)`. Order 1.
    pub fn euler() -> Self {
        Tableau {
            name: "euler".into(),
            order: 1,
            a: vec![vec![]],
            b: vec![1.0],
            c: vec![0.0],
            embedded: None,
        }
    }

    /// The classic fourth-order Runge–Kutta method.
    pub fn rk4() -> Self {
        Tableau {
            name: "rk4".into(),
            order: 4,
            a: vec![vec![], vec![0.5], vec![0.0, 0.5], vec![0.0, 0.0, 1.0]],
            b: vec![1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0],
            c: vec![0.0, 0.5, 0.5, 1.0],
            embedded: None,
        }
    }

    /// The method's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The method's order of convergence.
    pub fn order(&self) -> u32 {
        self.order
    }
    /// Number of stages (field evaluations per step).
    pub fn stages(&self) -> usize {
        self.b.len()
    }
    /// Row `i` of `a` (its `i` entries).
    pub fn a(&self, i: usize) -> &[f64] {
        &self.a[i]
    }
    /// The weights `b`.
    pub fn b(&self) -> &[f64] {
        &self.b
    }
    /// The nodes `c`.
    pub fn c(&self) -> &[f64] {
        &self.c
    }
    /// The embedded weights and their order, if any.
    pub fn embedded(&self) -> Option<(&[f64], u32)> {
        self.embedded.as_ref().map(|(b, o)| (b.as_slice(), *o))
    }
    /// Whether this is explicit Euler (one stage, weight 1, node 0): the
    /// integrator for which piecewise-constant fields are exact.
    pub fn is_euler(&self) -> bool {
        self.b == [1.0] && self.c == [0.0]
    }
}

/// The named integrators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Method {
    /// Explicit Euler (order 1).
    Euler,
    /// Classic Runge–Kutta (order 4).
    #[default]
    Rk4,
}

impl Method {
    /// The method's tableau.
    pub fn tableau(self) -> Tableau {
        match self {
            Method::Euler => Tableau::euler(),
            Method::Rk4 => Tableau::rk4(),
        }
    }
    /// The method's name (`"euler"`, `"rk4"`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Euler => "euler",
            Method::Rk4 => "rk4",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, FieldError> {
        match s.to_ascii_lowercase().as_str() {
            "euler" => Ok(Method::Euler),
            "rk4" => Ok(Method::Rk4),
            other => Err(FieldError::Invalid {
                context: "method".into(),
                why: format!("unknown integrator `{other}` (expected euler or rk4)"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_tableaus_are_valid() {
        for m in [Method::Euler, Method::Rk4] {
            let t = m.tableau();
            let rebuilt = Tableau::new(
                t.name(),
                t.order(),
                (0..t.stages()).map(|i| t.a(i).to_vec()).collect(),
                t.b().to_vec(),
                t.c().to_vec(),
            )
            .unwrap();
            assert_eq!(rebuilt, t);
        }
        assert!(Tableau::euler().is_euler());
        assert!(!Tableau::rk4().is_euler());
    }

    #[test]
    fn bad_tableaus_are_refused() {
        let implicit = Tableau::new("x", 1, vec![vec![1.0]], vec![1.0], vec![1.0]);
        assert!(matches!(implicit, Err(FieldError::BadTableau { .. })));
        let weights = Tableau::new("x", 1, vec![vec![]], vec![0.5], vec![0.0]);
        assert!(matches!(weights, Err(FieldError::BadTableau { .. })));
        let nodes = Tableau::new(
            "x",
            2,
            vec![vec![], vec![0.5]],
            vec![0.0, 1.0],
            vec![0.0, 0.4],
        );
        assert!(nodes.unwrap_err().to_string().contains("c[1]"));
        let emb = Tableau::rk4().with_embedded(vec![1.0], 3);
        assert!(emb.is_err());
    }
}
