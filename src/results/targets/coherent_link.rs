//! A GPU's coherent link to its CPU (NVLink-C2C on a Grace Hopper
//! superchip): the host link its transfers and its kernels over host
//! memory cross there, in place of a PCIe function. How many links it
//! has, how many are active, what one carries: a link that lost lanes
//! since it was baselined, or whose links are not all active, is a fault
//! of the hardware as a PCIe link trained low is.

use serde::{Deserialize, Serialize};

/// A device's coherent links to its host, as its management library
/// reports them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoherentLink {
    /// `NVLink-C2C`.
    pub name: String,
    /// Links the device has.
    pub links: u32,
    /// Links active.
    pub active: u32,
    /// What one active link carries each way, GB/s, as the library says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_gb_s: Option<f64>,
}

impl CoherentLink {
    /// What its active links carry together each way, GB/s; none where
    /// none is active or the rate is unknown.
    pub fn gb_s(&self) -> Option<f64> {
        (self.active > 0)
            .then_some(self.link_gb_s)
            .flatten()
            .map(|r| r * f64::from(self.active))
    }

    /// Why it is short of what the device has: links not active, in
    /// words; `None` when every link is.
    pub fn degraded(&self) -> Option<String> {
        (self.active < self.links).then(|| {
            format!(
                "{} of its {} {} links are active ({} inactive)",
                self.active,
                self.links,
                self.name,
                self.links - self.active
            )
        })
    }

    /// Why it is short of the link `then` (a baseline's): fewer links, or
    /// each carrying less (under 97 %: the rate is the library's, not a
    /// measurement, so any real drop is a retrained link). Inactive links
    /// are [`Self::degraded`]'s to say.
    pub fn short_of(&self, then: &CoherentLink) -> Option<String> {
        if self.links < then.links {
            return Some(format!(
                "{} {} links here, {} in the baseline",
                self.links, self.name, then.links
            ));
        }
        let (now, was) = self.link_gb_s.zip(then.link_gb_s)?;
        (now < 0.97 * was).then(|| {
            format!(
                "its {} links carry {now:.1} GB/s each way here, {was:.1} GB/s in the baseline",
                self.name
            )
        })
    }

    /// `NVLink-C2C: 10 of 10 links active, 45.0 GB/s each (450.0 GB/s
    /// each way)`.
    pub fn words(&self) -> String {
        let rate = match (self.link_gb_s, self.gb_s()) {
            (Some(one), Some(all)) => format!(", {one:.1} GB/s each ({all:.1} GB/s each way)"),
            (Some(one), None) => format!(", {one:.1} GB/s each"),
            _ => String::new(),
        };
        format!(
            "{}: {} of {} links active{rate}",
            self.name, self.active, self.links
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c2c(links: u32, active: u32, link_gb_s: Option<f64>) -> CoherentLink {
        CoherentLink {
            name: "NVLink-C2C".into(),
            links,
            active,
            link_gb_s,
        }
    }

    #[test]
    fn a_link_carries_its_active_links_together_and_names_the_inactive() {
        assert_eq!(c2c(10, 10, Some(45.0)).gb_s(), Some(450.0));
        assert_eq!(c2c(10, 8, Some(45.0)).gb_s(), Some(360.0));
        assert_eq!(c2c(10, 0, Some(45.0)).gb_s(), None);
        assert_eq!(c2c(10, 10, None).gb_s(), None);
        assert_eq!(c2c(10, 10, Some(45.0)).degraded(), None);
        assert_eq!(
            c2c(10, 8, Some(45.0)).degraded().unwrap(),
            "8 of its 10 NVLink-C2C links are active (2 inactive)"
        );
        assert_eq!(
            c2c(10, 10, Some(45.0)).words(),
            "NVLink-C2C: 10 of 10 links active, 45.0 GB/s each (450.0 GB/s each way)"
        );
        assert_eq!(
            c2c(10, 0, Some(45.0)).words(),
            "NVLink-C2C: 0 of 10 links active, 45.0 GB/s each"
        );
    }

    #[test]
    fn a_link_is_short_of_its_baseline_by_links_or_rate_not_by_noise() {
        let then = c2c(10, 10, Some(45.0));
        assert_eq!(c2c(10, 10, Some(44.0)).short_of(&then), None);
        assert_eq!(c2c(12, 12, Some(45.0)).short_of(&then), None);
        assert_eq!(
            c2c(8, 8, Some(45.0)).short_of(&then).unwrap(),
            "8 NVLink-C2C links here, 10 in the baseline"
        );
        assert!(
            c2c(10, 10, Some(22.5))
                .short_of(&then)
                .unwrap()
                .contains("22.5 GB/s")
        );
        // A rate not read judges nothing.
        assert_eq!(c2c(10, 10, None).short_of(&then), None);
    }
}
