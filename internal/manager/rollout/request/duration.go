package request

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
