//! Park et al. (R-TSC) delay and rate model.
