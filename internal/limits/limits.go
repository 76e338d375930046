package limits

// Number is a type a limit is counted in: any integer or floating-point
// type, or one defined on them such as time.Duration.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64
}

// PositiveOr returns v when it is above zero, and def otherwise: a limit
// left at zero, or set below it, takes its default. It is not for limits
// where zero means "none" or a negative value means "unlimited"; those
// need their own rule.
func PositiveOr[T Number](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
