"""Spec files, LTLf parsing and compilation to table DFAs (ltlf2dfa + MONA), cache, classification."""
