# The few nixpkgs lib functions the etcdx flake uses, with nixpkgs' meanings.
rec {
  genAttrs = names: f: builtins.listToAttrs (map (n: nameValuePair n (f n)) names);
  nameValuePair = name: value: { inherit name value; };
  mapAttrs = builtins.mapAttrs;
  mapAttrs' = f: set: builtins.listToAttrs (map (n: f n set.${n}) (builtins.attrNames set));
  filterAttrs = pred: set: builtins.listToAttrs (builtins.concatMap
    (n: if pred n set.${n} then [ (nameValuePair n set.${n}) ] else [ ])
    (builtins.attrNames set));
  attrValues = set: map (n: set.${n}) (builtins.attrNames set);
  optionalAttrs = cond: set: if cond then set else { };
  concatMapStringsSep = sep: f: list: builtins.concatStringsSep sep (map f list);
  removeSuffix = suffix: s:
    let
      ls = builtins.stringLength s;
      lx = builtins.stringLength suffix;
    in
    if lx <= ls && builtins.substring (ls - lx) lx s == suffix then builtins.substring 0 (ls - lx) s else s;
  fileContents = file: removeSuffix "\n" (builtins.readFile file);
  licenses.asl20 = { spdxId = "Apache-2.0"; fullName = "Apache License 2.0"; };
  platforms.linux = [ "x86_64-linux" "aarch64-linux" ];
}
