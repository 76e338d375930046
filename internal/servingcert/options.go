package servingcert

import "time"

// Options say how long certificates live and when they are replaced.
type Options struct {
	// CAValidity is how long a new CA is valid.
	CAValidity time.Duration
	// ServingValidity is how long a new serving certificate is valid
	// (never beyond its CA).
	ServingValidity time.Duration
	// RenewBefore is how long before its expiry a certificate (CA or
	// serving) is replaced. It must leave room for Overlap.
	RenewBefore time.Duration
	// Overlap is how long a new CA is trusted (in every caBundle) before
	// serving certificates are signed by it, so that clients learn it
	// before servers present it.
	Overlap time.Duration
}

// DefaultOptions returns the options of a running manager: a CA valid ten
// years, serving certificates valid one, both replaced 30 days before
// expiry, and a new CA trusted one hour before it is used.
func DefaultOptions() Options {
	return Options{
		CAValidity:      10 * 365 * 24 * time.Hour,
		ServingValidity: 365 * 24 * time.Hour,
		RenewBefore:     30 * 24 * time.Hour,
		Overlap:         time.Hour,
	}
}
