package ctlv2

import (
	"fmt"

	"github.com/urfave/cli"

	"etcdx/etcdutl/tool"
)

// backupCommand is upstream 3.5's deprecated "etcdctl backup": it runs etcdutl's backup
// in-process (upstream's calls etcdutl's code too), with v3 data only when --with-v3 is given.
func backupCommand(e *env) cli.Command {
	return cli.Command{Name: "backup", Usage: "--data-dir=... --backup-dir={output}",
		UsageText: "[deprecated] offline backup an etcd directory.",
		Flags: []cli.Flag{
			cli.StringFlag{Name: "data-dir", Usage: "Path to the etcd data dir"},
			cli.StringFlag{Name: "wal-dir", Usage: "Path to the etcd wal dir"},
			cli.StringFlag{Name: "backup-dir", Usage: "Path to the backup dir"},
			cli.StringFlag{Name: "backup-wal-dir", Usage: "Path to the backup wal dir"},
			cli.BoolFlag{Name: "with-v3", Usage: "Backup v3 backend data"},
		},
		Action: func(c *cli.Context) error {
			args := []string{"backup", "--with-v3=" + fmt.Sprint(c.Bool("with-v3"))}
			for _, f := range []string{"data-dir", "wal-dir", "backup-dir", "backup-wal-dir"} {
				if v := c.String(f); v != "" {
					args = append(args, "--"+f+"="+v)
				}
			}
			if code := tool.Run(args, e.stdout, e.stderr); code != 0 {
				return fail(code, "")
			}
			return nil
		}}
}
