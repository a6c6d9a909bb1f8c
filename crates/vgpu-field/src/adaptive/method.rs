//! [`AdaptiveMethod`]: the built-in embedded pairs by name.

use crate::adaptive::error::AdaptiveError;
use std::fmt;
use std::str::FromStr;

/// The built-in embedded Runge–Kutta pairs of the adaptive driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum AdaptiveMethod {
    /// Tsitouras 5(4), FSAL, free order-4 interpolant (the usual default).
    #[default]
    Tsit5,
    /// Dormand–Prince 5(4), FSAL, Shampine's order-4 dense output.
    Dp5,
    /// Bogacki–Shampine 3(2), FSAL, cubic Hermite dense output.
    Bs3,
    /// Verner 7(6) "most efficient", order-7 interpolant (5 lazy extra stages).
    Vern7,
    /// Rosenbrock23 (Shampine–Reichelt `ode23s`, OrdinaryDiffEq.jl's
    /// `Rosenbrock23`): a linearly implicit L-stable W-method of order 2 with
    /// an embedded order-3 error estimate, for stiff problems; needs the
    /// Jacobian (a `.field` kernel derives it symbolically), `D ≤ 16`.
    Rosenbrock23,
}

impl AdaptiveMethod {
    /// Every built-in explicit pair (the stiff [`AdaptiveMethod::Rosenbrock23`]
    /// is in [`AdaptiveMethod::EVERY`]).
    pub const ALL: [AdaptiveMethod; 4] = [
        AdaptiveMethod::Tsit5,
        AdaptiveMethod::Dp5,
        AdaptiveMethod::Bs3,
        AdaptiveMethod::Vern7,
    ];
    /// Every built-in method, explicit and stiff.
    pub const EVERY: [AdaptiveMethod; 5] = [
        AdaptiveMethod::Tsit5,
        AdaptiveMethod::Dp5,
        AdaptiveMethod::Bs3,
        AdaptiveMethod::Vern7,
        AdaptiveMethod::Rosenbrock23,
    ];
    /// The method's name (`"tsit5"`, `"dp5"`, `"bs3"`, `"vern7"`, `"rosenbrock23"`).
    pub fn name(self) -> &'static str {
        match self {
            AdaptiveMethod::Tsit5 => "tsit5",
            AdaptiveMethod::Dp5 => "dp5",
            AdaptiveMethod::Bs3 => "bs3",
            AdaptiveMethod::Vern7 => "vern7",
            AdaptiveMethod::Rosenbrock23 => "rosenbrock23",
        }
    }
    /// Order of the propagated solution.
    pub fn order(self) -> u32 {
        match self {
            AdaptiveMethod::Tsit5 | AdaptiveMethod::Dp5 => 5,
            AdaptiveMethod::Bs3 => 3,
            AdaptiveMethod::Rosenbrock23 => 2,
            AdaptiveMethod::Vern7 => 7,
        }
    }
}

impl fmt::Display for AdaptiveMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AdaptiveMethod {
    type Err = AdaptiveError;
    fn from_str(s: &str) -> Result<Self, AdaptiveError> {
        let lower = s.to_ascii_lowercase();
        AdaptiveMethod::EVERY
            .into_iter()
            .find(|m| m.name() == lower)
            .ok_or_else(|| AdaptiveError::UnknownMethod {
                name: s.to_string(),
            })
    }
}
