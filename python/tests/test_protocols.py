"""PyOP2's printable forms and Python protocols (PYOP2-API.md section 25), MixedDat as a data
carrier (section 11) and the order of a loop's checks (section 14): written from PyOP2's
documented forms, so each expected string is spelled out here."""

import numpy as np
import pytest
from numpy import array, dtype  # noqa: F401 (the namespace repr() forms are evaluated in)

from op2rs import op2
from op2rs.op2 import (Const, Dat, DataSet, Global, Kernel, Map, Mat,  # noqa: F401
                       MixedDataSet, MixedSet, Set, Sparsity)
from op2rs.op2 import Access  # noqa: F401


def mesh():
    nodes = op2.Set(4, "nodes")
    cells = op2.Set(3, "cells")
    c2n = op2.Map(cells, nodes, 2, [[0, 1], [1, 2], [2, 3]], "c2n")
    return nodes, cells, c2n


def test_access_forms_and_one_object_per_mode():
    assert str(op2.READ) == "OP2 Access: READ"
    assert repr(op2.INC) == "Access('INC')"
    assert eval(repr(op2.RW)) is op2.RW
    with pytest.raises(op2.ModeValueError):
        op2.Access("READWRITE")


def test_set_and_dataset_forms():
    s = op2.Set(5, "foo")
    assert str(s) == "OP2 Set: foo with size 5"
    again = eval(repr(s))
    assert isinstance(again, op2.Set) and again.name == "foo" and again.sizes == s.sizes
    halo = op2.Set([2, 3, 4, 6], "bar")
    assert eval(repr(halo)).sizes == (2, 3, 4, 6)
    d = op2.DataSet(s, 2, "dfoo")
    assert str(d) == "OP2 DataSet: dfoo on set OP2 Set: foo with size 5, with dim (2,)"
    e = eval(repr(d))
    assert isinstance(e, op2.DataSet) and e.dim == (2,) and e.name == "dfoo"
    assert len(s) == 1 and list(s) == [s] and len(d) == 1 and list(d) == [d]


def test_mixed_set_and_dataset_forms():
    a, b = op2.Set(2, "a"), op2.Set(3, "b")
    ms = op2.MixedSet([a, b])
    assert str(ms) == "OP2 MixedSet composed of Sets: (%r, %r)" % (a, b)
    assert repr(ms) == "MixedSet((%r, %r))" % (a, b)
    assert isinstance(eval(repr(ms)), op2.MixedSet)
    mds = op2.MixedDataSet(ms, [1, 2])
    assert str(mds) == "OP2 MixedDataSet composed of DataSets: (%r, %r)" % tuple(mds)
    assert repr(mds) == "MixedDataSet((%r, %r))" % tuple(mds)
    assert isinstance(eval(repr(mds)), op2.MixedDataSet)
    assert len(ms) == 2 and list(ms) == [a, b] and ms[1] is b


def test_dat_forms():
    nodes, _, _ = mesh()
    d = op2.Dat(nodes ** 2, np.arange(8.0), name="coords")
    assert str(d) == "OP2 Dat: coords on (%s) with datatype float64" % d.dataset
    e = eval(repr(d))
    assert isinstance(e, op2.Dat) and e.dtype == np.float64 and e.name == "coords"
    assert e.dataset.dim == (2,) and e.shape == d.shape
    i = op2.Dat(nodes, dtype=np.int32, name="ints")
    assert str(i).endswith("with datatype int32")
    assert eval(repr(i)).dtype == np.int32
    assert len(d) == 1 and list(d) == [d] and d.split == (d,)
    assert d.ctype == "double" and i.ctype == "int"


def test_global_forms_protocols_and_value_equality():
    g = op2.Global(2, [1.0, 2.5], name="g")
    assert str(g) == "OP2 Global Argument: g with dim (2,) and value [1.  2.5]"
    e = eval(repr(g))
    assert isinstance(e, op2.Global) and e.dim == (2,) and e.dtype == np.float64
    np.testing.assert_array_equal(e.data_ro, [1.0, 2.5])
    assert len(g) == 1 and list(g) == [g]
    assert g == op2.Global(2, [1.0, 2.5]) and not g != op2.Global(2, [1.0, 2.5])
    assert g != op2.Global(2, [1.0, 2.0]) and g != op2.Global(1, [1.0])
    assert g != "g"


def test_const_forms_protocols_and_value_equality():
    c = op2.Const(1, 3.5, "c_forms")
    try:
        assert str(c) == "OP2 Const: c_forms of dim (1,) and type float64 with value [3.5]"
        assert repr(c) == "Const((1,), %r, 'c_forms')" % (np.array([3.5]),)
        assert len(c) == 1 and list(c) == [c]
        c.remove_from_namespace()
        again = eval(repr(c))
        try:
            assert isinstance(again, op2.Const) and again == c
            other = op2.Const(1, 2.5, "c_forms_other")
            assert again != other and again != 3.5
            other.remove_from_namespace()
        finally:
            again.remove_from_namespace()
    finally:
        # As in PyOP2, removing a removed Const does nothing.
        c.remove_from_namespace()


def test_map_forms_protocols_and_value_equality():
    nodes, cells, c2n = mesh()
    assert str(c2n) == "OP2 Map: c2n from (%s) to (%s) with arity 2" % (cells, nodes)
    assert repr(c2n) == "Map(%r, %r, 2, None, 'c2n')" % (cells, nodes)
    assert isinstance(eval(repr(c2n)), op2.Map)
    assert len(c2n) == 1 and list(c2n) == [c2n] and c2n.split == (c2n,)
    same = op2.Map(cells, nodes, 2, [[0, 1], [1, 2], [2, 3]], "other_name")
    other = op2.Map(cells, nodes, 2, [[0, 1], [1, 2], [3, 2]])
    assert c2n == same and not c2n != same
    assert c2n != other
    assert c2n != op2.Map(op2.Set(3), nodes, 2, [[0, 1], [1, 2], [2, 3]])
    # Still keys by identity, as PyOP2's were.
    assert len({c2n: 1, same: 2}) == 2
    child = op2.Map(cells, nodes, 2, [[0, 1], [1, 2], [2, 3]], parent=c2n)
    assert child <= c2n and c2n <= c2n and not other <= c2n


def test_mixed_map_and_mixed_dat_forms():
    nodes, cells, c2n = mesh()
    c2c = op2.Map(cells, cells, 1, [[0], [1], [2]], "c2c")
    mm = op2.MixedMap([c2n, c2c])
    assert str(mm) == "OP2 MixedMap composed of Maps: (%r, %r)" % (c2n, c2c)
    assert repr(mm) == "MixedMap((%r, %r))" % (c2n, c2c)
    md = op2.MixedDat([op2.Dat(nodes), op2.Dat(cells ** 2)])
    assert str(md) == "OP2 MixedDat composed of Dats: (%r, %r)" % tuple(md)
    assert repr(md) == "MixedDat((%r, %r))" % tuple(md)


def test_kernel_forms():
    k = op2.Kernel("void forms_k(double *x) { *x = 1; }", "forms_k")
    assert str(k) == "OP2 Kernel: forms_k"
    assert repr(k) == 'Kernel("""void forms_k(double *x) { *x = 1; }""", \'forms_k\')'
    assert eval(repr(k)) is k


def test_sparsity_and_mat_forms_and_blocks():
    nodes, cells, c2n = mesh()
    sp = op2.Sparsity(nodes, c2n, "sp")
    assert str(sp) == "OP2 Sparsity: dsets %s, rmaps %s, cmaps %s, name sp" % (
        sp.dsets, sp.rmaps, sp.cmaps)
    assert repr(sp) == "Sparsity(%r, %r, 'sp')" % (sp.dsets, sp.maps)
    assert sp[0, 0] is sp and sp[0][0] is sp and list(sp) == [sp] and sp.shape == (1, 1)
    m = op2.Mat(sp, name="m")
    assert str(m) == "OP2 Mat: m, sparsity (%s), datatype float64" % sp
    assert repr(m) == "Mat(%r, %r, 'm')" % (sp, np.dtype("float64"))
    assert m[0, 0] is m and list(m) == [m] and m.blocks == [[m]]


def test_mixed_sparsity_and_mat_blocks():
    a, b, cells = op2.Set(3, "ba"), op2.Set(2, "bb"), op2.Set(2, "bcells")
    ca = op2.Map(cells, a, 2, [[0, 1], [1, 2]], "ca")
    cb = op2.Map(cells, b, 1, [[0], [1]], "cb")
    mm = op2.MixedMap([ca, cb])
    sp = op2.Sparsity(op2.MixedDataSet([a, b]), mm)
    assert sp.shape == (2, 2) and len(list(sp)) == 4
    assert sp[0, 1].dsets[0].set is a and sp[0, 1].dsets[1].set is b
    assert sp[1][0].maps == [(cb, ca)] and sp[1, 0] is sp[1][0]
    m = op2.Mat(sp, name="mixed")
    k = op2.Kernel("void blk(double A[3][3]) { for (int i = 0; i < 3; i++)"
                   " for (int j = 0; j < 3; j++) A[i][j] += 10 * i + j; }", "blk")
    op2.par_loop(k, cells, m(op2.INC, (mm[op2.i[0]], mm[op2.i[1]])))
    # Rows and columns: a's three, then b's two. Element e's rows: a[e], a[e+1], b[e].
    want = np.zeros((5, 5))
    for e in range(2):
        rows = [e, e + 1, 3 + e]
        for i in range(3):
            for j in range(3):
                want[rows[i], rows[j]] += 10 * i + j
    np.testing.assert_array_equal(m.values, want)
    np.testing.assert_array_equal(m[0, 0].values, want[:3, :3])
    np.testing.assert_array_equal(m[0, 1].values, want[:3, 3:])
    np.testing.assert_array_equal(m[1][0].values, want[3:, :3])
    assert [x.sparsity for x in m] == list(sp)


def test_arg_map_idx_split_and_equality():
    nodes, cells, c2n = mesh()
    d = op2.Dat(nodes, name="d")
    direct = op2.Dat(cells)(op2.READ)
    assert direct.map is None and direct.idx is None and direct.split == (direct,)
    assert d(op2.READ, c2n[1]).map is c2n and d(op2.READ, c2n[1]).idx == 1
    assert d(op2.INC, c2n).map is c2n and d(op2.INC, c2n).idx is None
    assert d(op2.INC, c2n[op2.i[0]]).idx == op2.i[0]
    assert d(op2.READ, c2n[0]) == d(op2.READ, c2n[0])
    assert d(op2.READ, c2n[0]) != d(op2.READ, c2n[1])
    assert d(op2.READ, c2n[0]) != d(op2.WRITE, c2n[0])
    assert d(op2.READ, c2n[0]).access is op2.READ and d(op2.READ, c2n[0]).data is d
    # A Global takes no map: one given is ignored.
    g = op2.Global(1, 0.0)
    assert g(op2.INC, c2n).map is None and g(op2.INC, c2n) == g(op2.INC)
    # A mixed Dat's arg splits into one arg per component, through its component map.
    c2c = op2.Map(cells, cells, 1, [[0], [1], [2]], "c2c2")
    mm = op2.MixedMap([c2n, c2c])
    md = op2.MixedDat([d, op2.Dat(cells)])
    parts = md(op2.READ, mm).split
    assert [p.data for p in parts] == list(md) and [p.map for p in parts] == [c2n, c2c]


def test_mixed_dat_dim_cdim_and_halo_flags():
    nodes, cells, _ = mesh()
    md = op2.MixedDat([op2.Dat(nodes ** 2), op2.Dat(cells)])
    assert md.dim == ((2,), (1,)) and md.cdim == (2, 1)
    for d in md:
        d.needs_halo_update = False
    assert not md.needs_halo_update
    md[1].needs_halo_update = True
    assert md.needs_halo_update
    md.needs_halo_update = True
    assert all(d.needs_halo_update for d in md)
    md.needs_halo_update = False
    assert not any(d.needs_halo_update for d in md)
    assert md == op2.MixedDat([op2.Dat(nodes ** 2), op2.Dat(cells)])
    assert md != op2.MixedDat([op2.Dat(nodes ** 2, np.ones(8)), op2.Dat(cells)])


def test_a_loop_that_writes_a_dat_flags_its_halo():
    nodes, cells, c2n = mesh()
    d = op2.Dat(nodes)
    d.needs_halo_update = False
    op2.par_loop(op2.Kernel("void rd(const double *x) { }", "rd"), cells, d(op2.READ, c2n[0]))
    assert not d.needs_halo_update
    op2.par_loop(op2.Kernel("void inc1(double *x) { *x += 1; }", "inc1"), cells,
                 d(op2.INC, c2n[0]))
    assert d.needs_halo_update
    d.data_ro_with_halos
    assert not d.needs_halo_update


def test_args_are_checked_before_the_kernel_is_compiled():
    nodes, cells, c2n = mesh()
    # A kernel that does not define its name is a valid object until a loop needs it.
    dummy = op2.Kernel("", "dummy")
    assert dummy.name == "dummy" and str(dummy) == "OP2 Kernel: dummy"
    d = op2.Dat(nodes)
    # The wrong iteration set is reported, not the kernel.
    with pytest.raises(op2.MapValueError):
        op2.par_loop(dummy, nodes, d(op2.READ, c2n[0]))
    with pytest.raises(op2.MapValueError):
        op2.par_loop(dummy, nodes, op2.Dat(cells)(op2.READ))
    with pytest.raises(op2.IndexValueError):
        op2.par_loop(dummy, cells, d(op2.INC, c2n[op2.i[0]]),
                     op2.Dat(nodes ** 2)(op2.INC, c2n[op2.i[0]], flatten=True))
    with pytest.raises(op2.SetTypeError):
        op2.par_loop(dummy, nodes ** 1, d(op2.READ))
    # With good args, the kernel is what fails.
    with pytest.raises(op2.KernelTypeError):
        op2.par_loop(dummy, cells, d(op2.READ, c2n[0]))


def test_access_modes_each_carrier_refuses():
    nodes, cells, c2n = mesh()
    sp = op2.Sparsity(nodes, c2n)
    m = op2.Mat(sp)
    for mode in (op2.READ, op2.RW, op2.MIN, op2.MAX):
        with pytest.raises(op2.ModeValueError):
            m(mode, (c2n[op2.i[0]], c2n[op2.i[1]]))
    for mode in (op2.MIN, op2.MAX):
        with pytest.raises(op2.ModeValueError):
            op2.Dat(nodes)(mode)
    for mode in (op2.WRITE, op2.RW):
        with pytest.raises(op2.ModeValueError):
            op2.Global(1)(mode)
    with pytest.raises(op2.ModeValueError):
        op2.Global(1)([op2.READ])


def test_sparsities_are_cached_by_their_sorted_unique_pairs():
    nodes, cells, c2n = mesh()
    other = op2.Map(cells, nodes, 2, [[1, 0], [2, 1], [3, 2]], "other")
    dset = nodes ** 1
    sp = op2.Sparsity((dset, dset), [(c2n, c2n), (other, other)])
    assert op2.Sparsity((dset, dset), [(other, other), (c2n, c2n)]) is sp
    assert op2.Sparsity((dset, dset), [(other, other), (c2n, c2n), (other, other)]) is sp
    assert len(sp.maps) == 2
    one = op2.Sparsity(dset, c2n)
    assert op2.Sparsity((dset, dset), (c2n, c2n)) is one
    assert op2.Sparsity((dset, dset), [(c2n, c2n)]) is one
    assert one is not sp
    # Maps of a pair from different iteration sets, or to the wrong set, are refused.
    from_nodes = op2.Map(nodes, nodes, 1, [[0], [1], [2], [3]])
    with pytest.raises(RuntimeError):
        op2.Sparsity((dset, dset), (c2n, from_nodes))
    with pytest.raises(RuntimeError):
        op2.Sparsity((cells ** 1, dset), (c2n, c2n))


def test_a_loop_object_checks_its_args_and_runs_on_compute():
    nodes, cells, c2n = mesh()
    other = op2.Set(2, "elsewhere")
    d = op2.Dat(nodes, name="pl")
    k = op2.Kernel("void pl_k(double *x) { *x += 1; }", "pl_k")
    with pytest.raises(op2.MapValueError):
        op2.ParLoop(k, other, d(op2.INC, c2n[0]))
    loop = op2.ParLoop(k, cells, d(op2.INC, c2n[0]))
    assert loop.kernel is k and loop.iterset is cells
    np.testing.assert_array_equal(d.data_ro, np.zeros(4))
    loop.compute()
    np.testing.assert_array_equal(d.data_ro, [1, 1, 1, 0])


def test_a_map_from_an_empty_set_needs_no_values():
    empty = op2.Set(0, "empty")
    nodes = op2.Set(3, "to3")
    m = op2.Map(empty, nodes, 3)
    assert m.values.shape == (0, 3)
    d = op2.Dat(nodes, [1.0, 2.0, 3.0])
    op2.par_loop(op2.Kernel("void em(double *x) { *x = 0; }", "em"), empty, d(op2.WRITE, m[0]))
    np.testing.assert_array_equal(d.data_ro, [1.0, 2.0, 3.0])
    assert m[2].idx == 2 and m[2].map is m


def test_solver_defaults_and_matrix_helpers():
    assert op2.Solver().parameters == op2.DEFAULT_SOLVER_PARAMETERS
    assert op2.DEFAULT_SOLVER_PARAMETERS["ksp_type"] == "cg"
    nodes, cells, c2n = mesh()
    m = op2.Mat(op2.Sparsity(nodes, c2n))
    op2.par_loop(op2.Kernel("void mh(double A[2][2]) { A[0][0] += 1; A[1][1] += 1; }", "mh"),
                 cells, m(op2.INC, (c2n[op2.i[0]], c2n[op2.i[1]])))
    m.assemble()
    # Mat * Dat of any type: its values read as float64.
    v = op2.Dat(nodes, np.array([1, 2, 3, 4], np.int32))
    np.testing.assert_array_equal((m * v).data_ro, [1.0, 4.0, 6.0, 4.0])


def test_mpi_comm_takes_a_fortran_handle_through_mpi4py():
    MPI = pytest.importorskip("mpi4py.MPI")
    old = op2.MPI.comm
    try:
        op2.MPI.comm = MPI.COMM_WORLD.py2f()
        assert isinstance(op2.MPI.comm, MPI.Comm) and op2.MPI.comm.size == old.size
        with pytest.raises(TypeError):
            op2.MPI.comm = None
    finally:
        op2.MPI.comm = MPI.COMM_WORLD


def test_every_error_kind_the_package_maps_is_one_the_native_module_raises():
    # A renamed Rust variant would otherwise turn its exception into the generic Op2Error.
    from op2rs import _op2
    from op2rs.exceptions import _KINDS
    kinds = set(_op2.error_kinds())
    assert "MapValueOutOfRange" in kinds and "KernelNotFound" in kinds
    assert set(_KINDS) <= kinds, sorted(set(_KINDS) - kinds)


def test_args_are_kept_per_access_path_and_flattening():
    nodes, cells, c2n = mesh()
    d = op2.Dat(nodes ** 2, name="kept")
    plain, flat = d(op2.READ, c2n), d(op2.READ, c2n, flatten=True)
    assert plain is d(op2.READ, c2n) and flat is d(op2.READ, c2n, flatten=True)
    assert plain is not flat and not plain.flatten and flat.flatten
    assert d(op2.READ, c2n, flatten=0) is plain
    assert d(op2.READ, c2n[0]) is not d(op2.READ, c2n[1]) and d(op2.INC) is not d(op2.READ)
    # A view handed out before a loop that uses the Dat is read-only after it, whatever the
    # access (PyOP2's rule); one asked for afterwards writes.
    v = d.data
    op2.par_loop(op2.Kernel("void kread(double *x[2]) { }", "kread"), cells, plain)
    with pytest.raises(ValueError):
        v[0, 0] = 1.0
    d.data[0, 0] = 1.0
    assert d.data_ro[0, 0] == 1.0


def test_the_native_modules_stub_names_what_the_module_has():
    # _op2.pyi is kept by hand: a class, function or method added or renamed on the Rust side
    # and not in the stub (or the other way round) fails here.
    import ast
    import os
    from op2rs import _op2
    with open(os.path.join(os.path.dirname(_op2.__file__), "_op2.pyi")) as f:
        tree = ast.parse(f.read())
    stub = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            stub[node.name] = {n.name if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                               else n.target.id
                               for n in node.body
                               if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                               or (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))}
        elif isinstance(node, ast.FunctionDef):
            stub[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            stub[node.target.id] = None
    public = {n for n in dir(_op2) if not n.startswith("_")}
    assert public == set(stub), (sorted(public - set(stub)), sorted(set(stub) - public))
    for name, members in stub.items():
        obj = getattr(_op2, name)
        if members is None or not isinstance(obj, type) or issubclass(obj, Exception):
            continue
        have = {n for n in vars(obj) if not n.startswith("_")}
        assert have <= members, (name, sorted(have - members))


def test_sets_refuse_attributes_pyop2_releases_did_not_have():
    # Kept and ignored, PyOP2's development-branch facet switches would run the wrong loop (a
    # kernel reading the upper cell's rows it is not given).
    s = op2.Set(3, "attrs")
    with pytest.raises(AttributeError):
        s.horizontal_interior_facets = True
    e = op2.ExtrudedSet(s, 3)
    with pytest.raises(AttributeError):
        e.iteration_layer = 1
    s.partition_size = 256
    s._extruded_bcs = (True, False)
    assert s.partition_size == 256 and s._extruded_bcs == (True, False)
