# The packages and builders the etcdx flake uses. Derivations run the host's bash with the host's
# tools on PATH; attributes a derivation cannot carry (meta, passthru) stay on the result only.
{ lib, system }:
let
  hostPath = "/usr/bin:/bin";
  strip = attrs: removeAttrs attrs [ "meta" "passthru" "env" ];
  # Nix 2.8 takes the end of the builder's output for its end and kills the build user's
  # processes; a builder caught between closing its output and exiting is reported "killed by
  # signal 9" (NixOS/nix#2176, one quick build in ten here). A sleeper started at exit keeps the
  # output open until the builder has exited; its exit status is kept.
  holdOutput = "trap '/bin/sleep 0.3 &' EXIT\n";
  run = name: attrs: script:
    (derivation (strip attrs // {
      inherit name system;
      builder = "/bin/bash";
      args = [ "-c" (holdOutput + script) ];
      PATH = attrs.PATH or hostPath;
    } // lib.mapAttrs (_: toString) (attrs.env or { })))
    // { meta = attrs.meta or { }; };

  # The host's tool, linked into a store path.
  hostTool = name: command: run name { } ''
    mkdir -p $out/bin
    ln -s "$(command -v ${command})" $out/bin/${command}
  '';

  # The version is read from Go's VERSION file (a quick builder, which holdOutput keeps from
  # being reported killed).
  go_1_26 = run "go-1.26-host" { } ''
    v=$(head -n 1 /usr/local/go/VERSION)
    case "$v" in go1.2[6-9]*|go1.[3-9]*) ;; *) echo "host Go is $v; go.work needs 1.26" >&2; exit 1 ;; esac
    ln -s /usr/local/go $out
  '';

  # buildGoModule: the vendor tree as a fixed-output derivation (its hash is vendorHash, so a
  # stale hash fails here as it does in nixpkgs), then an offline build with -mod=vendor.
  buildGoModuleWith = { go }: args:
    let
      goEnv = ''
        set -euo pipefail
        runHook() { :; }
        export HOME=$TMPDIR GOCACHE=$TMPDIR/go-cache GOPATH=$TMPDIR/go GOTOOLCHAIN=local GO111MODULE=on
        cp -r "$src" "$TMPDIR/src"
        chmod -R u+w "$TMPDIR/src"
        cd "$TMPDIR/src"
      '';
      goModules = run "${args.pname}-${args.version}-go-modules"
        {
          inherit (args) src;
          modBuildPhase = args.modBuildPhase or "go mod vendor";
          PATH = "${go}/bin:${hostPath}";
          env = args.env or { };
          outputHashMode = "recursive";
          outputHashAlgo = "sha256";
          outputHash = args.vendorHash;
          impureEnvVars = [ "GOPROXY" "http_proxy" "https_proxy" "HTTP_PROXY" "HTTPS_PROXY" "no_proxy" ];
        } ''
        ${goEnv}
        eval "$modBuildPhase"
        cp -r vendor "$out"
      '';
      mk = attrs: run "${attrs.pname}-${attrs.version}"
        (removeAttrs attrs [ "vendorHash" "modBuildPhase" ] // {
          inherit goModules;
          PATH = "${go}/bin:${hostPath}";
          subPackages = attrs.subPackages or [ "." ];
          doCheck = attrs.doCheck or true;
          checkPhase = attrs.checkPhase or "go test ./...";
          postInstall = attrs.postInstall or "";
        }) ''
        ${goEnv}
        export GOPROXY=off GOSUMDB=off GOFLAGS="-mod=vendor -trimpath"
        rm -rf vendor
        cp -r "$goModules" vendor
        chmod -R u+w vendor
        for p in $subPackages; do
          echo "Building subPackage ./$p"
          go install -ldflags "$ldflags -buildid=" "./$p"
        done
        if [ -n "$doCheck" ]; then eval "$checkPhase"; fi
        mkdir -p $out
        cp -r "$GOPATH/bin" $out/
        eval "$postInstall"
      ''
      // { overrideAttrs = f: mk (attrs // f attrs); inherit goModules go; };
    in
    mk args;

  # buildLayeredImage: a docker-archive tarball (gzipped, as nixpkgs') with one layer holding the
  # contents' bin directories; `docker load` takes it.
  buildLayeredImage = { name, tag, contents ? [ ], config ? { } }:
    run "docker-image-${baseNameOf name}.tar.gz"
      {
        inherit contents;
        imageName = name;
        imageTag = tag;
        configJSON = builtins.toJSON config;
        arch = { x86_64-linux = "amd64"; aarch64-linux = "arm64"; }.${system};
      } ''
      set -euo pipefail
      mkdir -p root/bin root/tmp img
      chmod 1777 root/tmp
      for c in $contents; do cp -a "$c"/bin/. root/bin/; done
      pack() { tar --sort=name --mtime=@1 --owner=0 --group=0 --numeric-owner -C "$1" -cf - .; }
      pack root > layer.tar
      layer=$(sha256sum layer.tar | cut -d' ' -f1)
      mkdir img/$layer && mv layer.tar img/$layer/layer.tar
      printf '{"architecture":"%s","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
        "$arch" "$configJSON" "$layer" > config.json
      cfg=$(sha256sum config.json | cut -d' ' -f1)
      mv config.json img/$cfg.json
      printf '[{"Config":"%s.json","RepoTags":["%s:%s"],"Layers":["%s/layer.tar"]}]' \
        "$cfg" "$imageName" "$imageTag" "$layer" > img/manifest.json
      pack img | gzip -n > $out
    '';
in
{
  inherit go_1_26;
  go = go_1_26;
  buildGoModule = {
    __functor = _: buildGoModuleWith { go = go_1_26; };
    override = o: { __functor = _: buildGoModuleWith o; };
  };
  runCommand = name: attrs: script: run name attrs ''
    set -euo pipefail
    ${script}
  '';
  dockerTools = { inherit buildLayeredImage; };
  mkShell = { packages ? [ ], ... }: run "nix-shell" { inherit packages; } ''
    mkdir -p $out
    for p in $packages; do echo "$p"; done > $out/packages
  '';
  gnumake = hostTool "gnumake" "make";
  git = hostTool "git" "git";
  bash = hostTool "bash" "bash";
  curl = hostTool "curl" "curl";
  zsh = hostTool "zsh" "zsh";
}
