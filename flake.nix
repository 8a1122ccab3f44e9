{
  description = "etcdx: an independent etcd v3, built for its version lifecycle";

  # nixpkgs is the only input. `make nix-check` evaluates and builds this flake offline against the
  # stand-in under nix/nixpkgs-standin (see docs/building.md).
  inputs.nixpkgs.url = "nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      lib = nixpkgs.lib;
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forSystems = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      # This project's own release; the binaries report the upstream etcd release of their level
      # (the newest, by default: etcdx/pkg/buildinfo) and add this one beside it.
      version = lib.fileContents ./VERSION;
      # Stamped into every binary (etcd --version, /version); a dirty tree says so.
      revision = self.shortRev or "dirty";
      # The hash of `go work vendor` for the whole workspace; `make nix-hash` rewrites it and a
      # test fails when it is stale.
      vendorHash = lib.fileContents ./nix/vendor-hash;

      # Binaries: name -> the package directory that holds its main package.
      commands = {
        etcd = "server";
        etcdctl = "etcdctl";
        etcdutl = "etcdutl";
        discovery = "discovery/cmd/discovery";
        upgradelab = "upgradelab/cmd/upgradelab";
      };
      # The older levels the workspace build also links, by package name.
      olderLevels = { level36 = "3.6"; level35 = "3.5"; };
      # The images: one per server binary, with the CLIs beside the server.
      servers = lib.filterAttrs (name: _: builtins.elem name [ "etcd" "discovery" ]) commands;

      perSystem = pkgs:
        let
          go = pkgs.go_1_26;
          buildGoModule = pkgs.buildGoModule.override { inherit go; };

          # Every binary in one build: the workspace is vendored once and compiled once.
          workspace = buildGoModule {
            pname = "etcdx";
            inherit version vendorHash;
            src = self;
            # A workspace is vendored with `go work vendor` (buildGoModule's default is
            # `go mod vendor`, which refuses to run in workspace mode).
            modBuildPhase = ''
              runHook preBuild
              go work vendor
              runHook postBuild
            '';
            subPackages = lib.attrValues commands;
            env.CGO_ENABLED = 0;
            ldflags = [
              "-s"
              "-w"
              "-X etcdx/pkg/buildinfo.Release=${version}"
              "-X etcdx/pkg/buildinfo.GitSHA=${revision}"
            ];
            # Tests run in `checks` (and `make test`), not in the package build.
            doCheck = false;
            # go install names a binary after its directory; the server's is `server`. The older
            # levels (as `make build` leaves them in bin/levels/) differ only in the stamped level:
            # linked here from the same compile, they cost a link each, not a build.
            postInstall = ''
              mv $out/bin/server $out/bin/etcd
              for level in ${builtins.concatStringsSep " " (lib.attrValues olderLevels)}; do
                mkdir -p $out/levels/$level
                for p in server etcdctl etcdutl; do
                  go build -ldflags "$ldflags -X etcdx/pkg/buildinfo.Level=$level" -o $out/levels/$level/ ./$p
                done
                mv $out/levels/$level/server $out/levels/$level/etcd
              done
            '';
            meta = {
              description = "etcdx server, etcdctl, etcdutl, the discovery service and the upgrade lab";
              license = lib.licenses.asl20;
              platforms = lib.platforms.linux;
            };
          };

          # An older line's etcd, etcdctl and etcdutl (3.6: upstream 3.6.16's behaviour; 3.5:
          # 3.5.35's), cut from the workspace build.
          atLevel = level: pkgs.runCommand "etcdx-level-${level}-${version}"
            {
              meta = workspace.meta // { mainProgram = "etcd"; };
            } ''
            mkdir -p $out/bin
            cp ${workspace}/levels/${level}/* $out/bin/
          '';

          # One package per binary, cut from the workspace build.
          single = name: pkgs.runCommand "${name}-${version}"
            {
              meta = workspace.meta // { mainProgram = name; };
            } ''
            mkdir -p $out/bin
            cp ${workspace}/bin/${name} $out/bin/${name}
          '';

          image = name: pkgs.dockerTools.buildLayeredImage {
            name = "etcdx/${name}";
            tag = version;
            contents = [ workspace ];
            config = {
              Entrypoint = [ "/bin/${name}" ];
              Labels = {
                "org.opencontainers.image.version" = version;
                "org.opencontainers.image.revision" = revision;
              };
            } // lib.optionalAttrs (name == "etcd") {
              # The server keeps its data in a volume and serves clients (2379) and peers (2380).
              Env = [ "ETCD_DATA_DIR=/var/lib/etcd" ];
              Volumes = { "/var/lib/etcd" = { }; };
              ExposedPorts = { "2379/tcp" = { }; "2380/tcp" = { }; };
            } // lib.optionalAttrs (name == "discovery") {
              # `discovery serve` keeps its tokens in NAME.etcd under the working directory (a
              # volume); members register on 2379, the token API is on 2381.
              Cmd = [ "serve" "--listen-client-urls" "http://0.0.0.0:2379" "--listen-api-url" "http://0.0.0.0:2381" ];
              WorkingDir = "/var/lib/discovery";
              Volumes = { "/var/lib/discovery" = { }; };
              ExposedPorts = { "2379/tcp" = { }; "2380/tcp" = { }; "2381/tcp" = { }; };
            };
          };
        in
        {
          packages = lib.mapAttrs (name: _: single name) commands
            // lib.mapAttrs' (name: _: lib.nameValuePair "${name}-image" (image name)) servers
            // lib.mapAttrs (_: atLevel) olderLevels
            // { default = workspace; };

          checks = {
            # The unit tests of every module but e2e (which needs the built binaries and, for its
            # comparisons, upstream etcd from the module proxy).
            unit = workspace.overrideAttrs (old: {
              pname = "etcdx-unit-tests";
              doCheck = true;
              postInstall = "mv $out/bin/server $out/bin/etcd"; # the older levels' links are not what it checks
              checkPhase = ''
                runHook preCheck
                export GOFLAGS=''${GOFLAGS//-trimpath/}
                go test ${lib.concatMapStringsSep " " (m: "./${m}/...") [ "pkg" "server" "etcdctl" "etcdutl" "discovery" "upgradelab" ]}
                runHook postCheck
              '';
            });
          };

          devShells.default = pkgs.mkShell {
            packages = [ go pkgs.gnumake pkgs.git pkgs.bash pkgs.curl pkgs.zsh ];
          };
        };

      bySystem = forSystems perSystem;
    in
    {
      packages = lib.mapAttrs (_: s: s.packages) bySystem;
      checks = lib.mapAttrs (_: s: s.checks) bySystem;
      devShells = lib.mapAttrs (_: s: s.devShells) bySystem;
    };
}
