package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/internal/cli/output"
)

// VersionInfo is what slipway version prints.
type VersionInfo struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// buildVersion reads the version from the binary's build information: the module version
// (a tagged release) or "(devel)", and the VCS revision the build was made from.
func buildVersion() VersionInfo {
	v := VersionInfo{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func versionString() string { return buildVersion().Version }

// VersionOptions are slipway version's.
type VersionOptions struct {
	f    *Factory
	Info VersionInfo
}

// NewCmdVersion is `slipway version`.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{f: f}
	return &cobra.Command{
		Use:     "version",
		Short:   "Print slipway's version",
		Args:    cobraArgs(cobra.NoArgs),
		GroupID: groupSetup,
		Example: "  slipway version\n  slipway version -o json",
		RunE: func(*cobra.Command, []string) error {
			opts.Info = buildVersion()
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
}

func versionRun(opts *VersionOptions) error {
	f, v := opts.f, opts.Info
	return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), v, func(p *output.Printer) error {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if v.Modified {
			rev += " (modified)"
		}
		_, err := fmt.Fprintf(p.Out(), "slipway %s\n", v.Version)
		if err == nil && rev != "" {
			_, err = fmt.Fprintf(p.Out(), "revision %s %s\n", rev, v.Time)
		}
		if err == nil {
			_, err = fmt.Fprintf(p.Out(), "%s %s\n", v.GoVersion, v.Platform)
		}
		return err
	})
}
