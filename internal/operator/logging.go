package operator

import (
	"os"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// NewLogger builds the operator's logger from controller-runtime's zap options (the --zap-*
// flags), with zap.New's production defaults (JSON, info, stack traces from error on, RFC 3339
// times) but without its sampling.
//
// zap.New samples production logs by message: after 100 lines with the same message in a second,
// one in 100. Reconcilers log constant messages ("Found tag", "Created Job") with the object in
// the keys, so at scale the sampler drops most objects' lines, among them the notes that stand in
// for Events dropped by --event-qps (see EventRecorder): those notes would then be nowhere. Log
// volume is bounded by the reconciles, which the work queues bound; a log pipeline that needs
// less can sample downstream, where it can tell objects apart.
func NewLogger(o crzap.Options) logr.Logger {
	if o.Development {
		// Development mode never samples.
		return crzap.New(crzap.UseFlagOptions(&o))
	}
	if o.DestWriter == nil {
		o.DestWriter = os.Stderr
	}
	if o.Level == nil {
		lvl := zap.NewAtomicLevelAt(zap.InfoLevel)
		o.Level = &lvl
	}
	if o.StacktraceLevel == nil {
		lvl := zap.NewAtomicLevelAt(zap.ErrorLevel)
		o.StacktraceLevel = &lvl
	}
	if o.TimeEncoder == nil {
		o.TimeEncoder = zapcore.RFC3339TimeEncoder
	}
	enc := o.Encoder
	if enc == nil {
		cfgOpts := append([]crzap.EncoderConfigOption{func(c *zapcore.EncoderConfig) { c.EncodeTime = o.TimeEncoder }}, o.EncoderConfigOptions...)
		if o.NewEncoder != nil {
			enc = o.NewEncoder(cfgOpts...)
		} else {
			cfg := zap.NewProductionEncoderConfig()
			for _, opt := range cfgOpts {
				opt(&cfg)
			}
			enc = zapcore.NewJSONEncoder(cfg)
		}
	}
	sink := zapcore.AddSync(o.DestWriter)
	opts := append(o.ZapOpts, zap.AddStacktrace(o.StacktraceLevel), zap.ErrorOutput(sink))
	return zapr.NewLogger(zap.New(zapcore.NewCore(&crzap.KubeAwareEncoder{Encoder: enc}, sink, o.Level), opts...))
}
