//! A crate's module tree, read as rustc reads it: from the crate root through every `mod`
//! declaration (files beside it or in its folder, `#[path]`, inline modules).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use syn::Item;

use crate::Error;
use crate::attributes::{is_test_only, path_attribute};

/// A module's index in [`Tree::modules`]; the crate root is 0.
pub(crate) type ModuleId = usize;

/// The modules of one crate target, test modules left out.
pub(crate) struct Tree {
    pub(crate) modules: Vec<Module>,
    /// Every file of the target, test modules' files included.
    pub(crate) files: Vec<SourceFile>,
}

/// A module that is not test code.
pub(crate) struct Module {
    /// Its names from the crate root (empty for the root).
    pub(crate) path: Vec<String>,
    pub(crate) parent: Option<ModuleId>,
    pub(crate) children: BTreeMap<String, ModuleId>,
    /// The file its items are in.
    pub(crate) file: PathBuf,
    /// Its items; those of inline modules are moved into the modules themselves.
    pub(crate) items: Vec<Item>,
}

/// One file of a crate target.
pub(crate) struct SourceFile {
    pub(crate) path: PathBuf,
    pub(crate) lines: usize,
    /// Reached through a test-only module (`#[cfg(test)] mod tests;`).
    pub(crate) test: bool,
}

/// A module declared by `mod`, its file read.
struct Declared {
    name: String,
    test: bool,
    file: PathBuf,
    items: Vec<Item>,
    directory: Directory,
}

/// Where the `mod x;` declarations of a module look for files (rustc's "directory ownership").
#[derive(Clone)]
struct Directory {
    path: PathBuf,
    /// For a module in `a/x.rs` (not `mod.rs`), its children are in `a/x/`: `x`.
    relative: Option<String>,
}

impl Tree {
    /// Reads the module tree of the crate whose root file is `root`.
    pub(crate) fn load(root: &Path) -> Result<Tree, Error> {
        let mut tree = Tree { modules: Vec::new(), files: Vec::new() };
        let items = tree.read(root, false)?;
        let directory = Directory { path: parent_of(root), relative: None };
        tree.add(Vec::new(), None, root.to_owned(), items, &directory)?;
        Ok(tree)
    }

    /// Whether `ancestor` is `module` or one of the modules it is in.
    pub(crate) fn is_ancestor_or_self(&self, ancestor: ModuleId, module: ModuleId) -> bool {
        let mut current = Some(module);
        while let Some(id) = current {
            if id == ancestor {
                return true;
            }
            current = self.modules[id].parent;
        }
        false
    }

    fn add(
        &mut self,
        path: Vec<String>,
        parent: Option<ModuleId>,
        file: PathBuf,
        mut items: Vec<Item>,
        directory: &Directory,
    ) -> Result<(), Error> {
        let declared = self.declared(&file, &mut items, directory, false)?;
        let id = self.modules.len();
        self.modules.push(Module { path: path.clone(), parent, children: BTreeMap::new(), file, items });
        for child in declared {
            if child.test {
                self.walk_test(child)?;
                continue;
            }
            let child_path = path.iter().cloned().chain([child.name.clone()]).collect();
            let child_id = self.modules.len();
            self.modules[id].children.insert(child.name, child_id);
            self.add(child_path, Some(id), child.file, child.items, &child.directory)?;
        }
        Ok(())
    }

    /// The files of a test module and of the modules in it: counted as files, not as modules.
    fn walk_test(&mut self, mut module: Declared) -> Result<(), Error> {
        for child in self.declared(&module.file, &mut module.items, &module.directory, true)? {
            self.walk_test(child)?;
        }
        Ok(())
    }

    /// The modules `items` declare, their files read; inline modules' items are moved out.
    fn declared(
        &mut self,
        file: &Path,
        items: &mut [Item],
        directory: &Directory,
        in_test: bool,
    ) -> Result<Vec<Declared>, Error> {
        let mut declared = Vec::new();
        for item in items {
            let Item::Mod(declaration) = item else { continue };
            let name = declaration.ident.to_string();
            let test = in_test || is_test_only(&declaration.attrs);
            let path = path_attribute(&declaration.attrs);
            let (file, items, directory) = match declaration.content.as_mut() {
                Some((_, inline)) => (file.to_owned(), std::mem::take(inline), directory.inline(&name, path)),
                None => self.external(file, directory, &name, path, test)?,
            };
            declared.push(Declared { name, test, file, items, directory });
        }
        Ok(declared)
    }

    /// The file of `mod name;`, read and parsed, and where its own `mod` declarations look.
    fn external(
        &mut self,
        file: &Path,
        directory: &Directory,
        name: &str,
        path: Option<String>,
        test: bool,
    ) -> Result<(PathBuf, Vec<Item>, Directory), Error> {
        let (path, child_directory) = match path {
            // Files named by `#[path]` own their folder, as `mod.rs` files do.
            Some(relative) => {
                let path = directory.path.join(relative);
                let child_directory = Directory { path: parent_of(&path), relative: None };
                (path, child_directory)
            }
            None => {
                let base = directory.base();
                let beside = base.join(format!("{name}.rs"));
                let inside = base.join(name).join("mod.rs");
                if beside.is_file() {
                    (beside, Directory { path: base, relative: Some(name.to_owned()) })
                } else if inside.is_file() {
                    (inside, Directory { path: base.join(name), relative: None })
                } else {
                    return Err(Error::MissingModule { module: name.to_owned(), file: file.to_owned() });
                }
            }
        };
        let items = self.read(&path, test)?;
        Ok((path, items, child_directory))
    }

    fn read(&mut self, path: &Path, test: bool) -> Result<Vec<Item>, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read { path: path.to_owned(), source })?;
        let parsed = syn::parse_file(&text).map_err(|error| Error::Parse {
            path: path.to_owned(),
            line: error.span().start().line,
            message: error.to_string(),
        })?;
        self.files.push(SourceFile { path: path.to_owned(), lines: text.matches('\n').count(), test });
        Ok(parsed.items)
    }
}

impl Directory {
    /// Where `mod x;` looks: the folder, and in it the module's own folder for `x.rs` files.
    fn base(&self) -> PathBuf {
        match &self.relative {
            Some(relative) => self.path.join(relative),
            None => self.path.clone(),
        }
    }

    /// The directory of `mod name { … }` declared in this one.
    fn inline(&self, name: &str, path: Option<String>) -> Directory {
        match path {
            Some(path) => Directory { path: self.path.join(path), relative: None },
            None => Directory { path: self.base().join(name), relative: None },
        }
    }
}

fn parent_of(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

#[cfg(test)]
impl Tree {
    /// A tree from one file's text, its modules inline (`mod a { … }`).
    pub(crate) fn parse(text: &str) -> Tree {
        let items = syn::parse_file(text).expect("valid Rust").items;
        let mut tree = Tree { modules: Vec::new(), files: Vec::new() };
        let directory = Directory { path: PathBuf::new(), relative: None };
        tree.add(Vec::new(), None, PathBuf::from("lib.rs"), items, &directory).expect("inline modules only");
        tree
    }
}
