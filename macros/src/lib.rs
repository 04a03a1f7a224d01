//! `#[kernel]`: the one declaration of a tessel kernel. Re-exported by `tessel-device` (and its
//! prelude); see [`macro@kernel`].

#![warn(missing_docs)]
use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{quote, ToTokens};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{parse_macro_input, Attribute, Error, Ident, ImplItem, ItemImpl, Token, Type};

/// One entry point: `#[attrs] name` or `#[attrs] name = Type`.
struct Instance {
    attrs: Vec<Attribute>,
    name: Ident,
    ty: Option<Type>,
}

impl Parse for Instance {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let name: Ident = input.parse()?;
        let ty = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            Some(input.parse()?)
        } else {
            None
        };
        Ok(Instance { attrs, name, ty })
    }
}

/// Declares a kernel: put it on the `impl Kernel for T` block, naming its PTX entry points,
/// `#[kernel(scale_f32 = Scale<f32>, scale_bf16 = Scale<bf16>)]` (or `#[kernel(copy)]` when `T`
/// has no parameters: one entry of that name for `T` itself). Each `name = Type` gives
///
/// - on `nvptx64`, `extern "ptx-kernel" fn name(p: Type::Params<Device>)`, the PTX entry point,
///   running the kernel's `thread` in every thread of the launch (`tessel_device::device::run`);
/// - `impl Entry for Type` naming it, which the host's launcher (`Module::launch::<Type>`)
///   finds it by, and checks its parameter's size against the PTX;
///
/// and the simulated GPU runs the same `thread` (`tessel::sim::launch::<Type>`). An entry may
/// carry attributes of its own, e.g. `#[cfg(target_feature = "sm_90a")] name = Type` for
/// instructions only some archs have.
///
/// The impl's `thread` and `prepare` are marked `#[inline(always)]` unless they say otherwise:
/// optimised on its own before it is inlined into the entry, a `thread` can keep a stack frame
/// and a call (a wgmma kernel's was 112 bytes), a `prepare` its `Result` on the stack.
///
/// Errors (at compile time, naming the condition): the attribute is not on an `impl Kernel for
/// ..` block, names no entry, names one twice, or names an entry without its instance where the
/// impl is generic.
#[proc_macro_attribute]
pub fn kernel(args: TokenStream, item: TokenStream) -> TokenStream {
    let instances =
        parse_macro_input!(args with Punctuated::<Instance, Token![,]>::parse_terminated);
    let imp = parse_macro_input!(item as ItemImpl);
    expand(instances.into_iter().collect(), imp)
        .unwrap_or_else(Error::into_compile_error)
        .into()
}

fn expand(instances: Vec<Instance>, mut imp: ItemImpl) -> syn::Result<Tokens> {
    let is_kernel = imp.trait_.as_ref().is_some_and(|(bang, path, _)| {
        bang.is_none() && path.segments.last().is_some_and(|s| s.ident == "Kernel")
    });
    if !is_kernel {
        return Err(Error::new_spanned(
            imp.impl_token,
            "#[kernel] goes on an `impl Kernel for T` block",
        ));
    }
    if instances.is_empty() {
        return Err(Error::new(
            Span::call_site(),
            "#[kernel(..)] names its entry points: `#[kernel(name = Type, ..)]`",
        ));
    }
    for (i, a) in instances.iter().enumerate() {
        if instances[..i].iter().any(|b| b.name == a.name) {
            return Err(Error::new_spanned(
                &a.name,
                "this entry point is named twice",
            ));
        }
    }
    for f in imp.items.iter_mut() {
        if let ImplItem::Fn(f) = f {
            let hot = f.sig.ident == "thread" || f.sig.ident == "prepare";
            if hot && !f.attrs.iter().any(|a| a.path().is_ident("inline")) {
                f.attrs.push(syn::parse_quote!(#[inline(always)]));
            }
        }
    }
    let generic = !imp.generics.params.is_empty();
    let mut out = imp.to_token_stream();
    for Instance { attrs, name, ty } in instances {
        let ty = match ty {
            Some(t) => t,
            None if !generic => (*imp.self_ty).clone(),
            None => {
                return Err(Error::new_spanned(
                    &name,
                    "the impl is generic: name the instance, `name = Type<..>`",
                ))
            }
        };
        let label = name.to_string();
        let doc = format!("The PTX entry point of `{}`.", ty.to_token_stream());
        out.extend(quote! {
            #[cfg(target_arch = "nvptx64")]
            #(#attrs)*
            #[no_mangle]
            #[doc = #doc]
            pub unsafe extern "ptx-kernel" fn #name(
                p: <#ty as ::tessel_device::ctx::Kernel>::Params<::tessel_device::mem::Device>,
            ) {
                ::tessel_device::device::run::<#ty>(p)
            }
            impl ::tessel_device::ctx::Entry for #ty {
                const NAME: &'static str = #label;
            }
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &str, item: &str) -> Result<String, String> {
        let args: Tokens = args.parse().unwrap();
        let parser = Punctuated::<Instance, Token![,]>::parse_terminated;
        let instances = syn::parse::Parser::parse2(parser, args).map_err(|e| e.to_string())?;
        let imp: ItemImpl = syn::parse_str(item).unwrap();
        expand(instances.into_iter().collect(), imp)
            .map(|t| t.to_string())
            .map_err(|e| e.to_string())
    }

    const GENERIC: &str = "impl<T: Real> Kernel for Scale<T> {
        fn prepare() {}
        #[inline(never)] fn geometry() {}
        unsafe fn thread() {}
    }";

    #[test]
    fn each_instance_gets_an_entry_and_its_name() {
        let out = run(
            "scale_f32 = Scale<f32>, #[cfg(target_feature = \"sm_90a\")] scale_bf16 = Scale<bf16>",
            GENERIC,
        )
        .unwrap();
        for want in [
            "pub unsafe extern \"ptx-kernel\" fn scale_f32",
            "run :: < Scale < f32 > > (p)",
            "impl :: tessel_device :: ctx :: Entry for Scale < f32 > { const NAME : & 'static str = \"scale_f32\" ; }",
            "# [cfg (target_feature = \"sm_90a\")] # [no_mangle]",
            "const NAME : & 'static str = \"scale_bf16\"",
        ] {
            assert!(out.contains(want), "{want} not in {out}");
        }
        // the entry is the device's only
        assert_eq!(
            out.matches("# [cfg (target_arch = \"nvptx64\")]").count(),
            2
        );
    }

    #[test]
    fn thread_and_prepare_are_inlined_unless_they_say_otherwise() {
        let out = run("s = Scale<f32>", GENERIC).unwrap();
        assert!(out.contains("# [inline (always)] fn prepare"), "{out}");
        assert!(
            out.contains("# [inline (always)] unsafe fn thread"),
            "{out}"
        );
        assert!(out.contains("# [inline (never)] fn geometry"), "{out}");
        let out = run(
            "s = Scale<f32>",
            "impl Kernel for S { #[inline] fn thread() {} }",
        )
        .unwrap();
        assert!(out.contains("# [inline] fn thread"), "{out}");
    }

    #[test]
    fn a_plain_type_s_entry_needs_only_its_name() {
        let out = run("copy", "impl Kernel for Copy { }").unwrap();
        assert!(out.contains("Entry for Copy"), "{out}");
    }

    #[test]
    fn each_misuse_is_named() {
        let e = run("s = S", "impl Other for S {}").unwrap_err();
        assert!(e.contains("goes on an `impl Kernel for T` block"), "{e}");
        let e = run("s = S", "impl !Kernel for S {}").unwrap_err();
        assert!(e.contains("goes on an `impl Kernel for T` block"), "{e}");
        let e = run("", GENERIC).unwrap_err();
        assert!(e.contains("names its entry points"), "{e}");
        let e = run("a = Scale<f32>, a = Scale<bf16>", GENERIC).unwrap_err();
        assert!(e.contains("named twice"), "{e}");
        let e = run("a", GENERIC).unwrap_err();
        assert!(e.contains("the impl is generic"), "{e}");
        assert!(run("a = ", GENERIC).is_err());
    }
}
