{
  # A small local stand-in for nixpkgs, for machines that cannot download it: it provides only
  # what ../../flake.nix uses, with the same names and arguments, and builds with the host's Go
  # (/usr/local/go) and shell tools, so it needs `sandbox = false`. `make nix-check` passes it
  # with --override-input nixpkgs. Real nixpkgs replaces it everywhere else.
  description = "stand-in for the parts of nixpkgs the etcdx flake uses";

  outputs = { self }:
    let
      lib = import ./lib.nix;
    in
    {
      inherit lib;
      legacyPackages = lib.genAttrs [ "x86_64-linux" "aarch64-linux" ]
        (system: import ./pkgs.nix { inherit lib system; });
    };
}
