package chaos

// CheckSets reads the records of set grants (AcquireAll), one per name of
// each set (perName), and reports what Check reports of a lock's grants,
// name by name and by the same rules (lockRules): two holds of one name
// at once, whether by two sets or by one set twice (Overlap); a fenced
// record whose name's token is not above every earlier record's of that
// name, in grant order (FenceOrder); a loss heard too late (LateLoss); a
// grant returned after its Until (PastGrant). Its Grants counts records,
// not sets: a set of three names is three.
func CheckSets(grants []Grant) Report {
	return check(grants, SetPrim, lockRules)
}
