"""memoryd's tests: a folder per stage of the package (docs/development.md), and at the top
whole-product checks: the docs, the layering, the first day, fuzzing the wire, the daemon's
lifecycle, privacy, the evaluation set, the benches."""
